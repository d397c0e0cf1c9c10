/*
 * fuzz_redact: hiding secrets in the canary's command line (src/core/redact.c).
 *
 * Input: an environment ("NAME=value" lines), a NUL, the text to redact, and optionally a NUL and
 * a --redact pattern. Properties: a refused pattern is CG_EINPUT naming it; the output holds no
 * secret value of the environment (values without '*', which the mark itself could complete);
 * a pattern's match (one that holds no '*') is gone; no well-known token shape
 * (CG_REDACT_TOKEN_SHAPES: GitHub, Slack, AWS, Hugging Face) is left, since the mark, which no
 * shape holds, can never join two pieces into one; every URL's authority in the output holds its
 * userinfo only as the mark.
 */
#include "fuzz.h"

#include "redact.h"

#include <regex.h>

#define MAX_ENV 64

static void check_userinfo(const char *out)
{
    for (const char *p = strstr(out, "://"); p != NULL; p = strstr(p + 1, "://")) {
        const char *auth = p + 3;
        size_t n = strcspn(auth, "/?#\\ \t\r\n\"'<>");
        const char *at = NULL;
        for (size_t i = 0; i < n; i++)
            if (auth[i] == '@')
                at = auth + i;
        if (at == NULL)
            continue;
        /* what is left before the last '@' of an authority can only be marks and '@'s */
        for (const char *c = auth; c < at; c++)
            CG_FUZZ_CHECK(*c == '*' || *c == '@' || *c == ':' || *c == '/',
                          "userinfo left in '%.80s'", auth);
    }
}

/* No token shape is left in out. */
static void check_token_shapes(const char *out)
{
    static regex_t shapes[CG_REDACT_N_TOKEN_SHAPES];
    static bool made;
    static const char *const text[] = CG_REDACT_TOKEN_SHAPES;
    if (!made) {
        for (size_t i = 0; i < CG_REDACT_N_TOKEN_SHAPES; i++)
            CG_FUZZ_CHECK(regcomp(&shapes[i], text[i], REG_EXTENDED) == 0, "shape %s", text[i]);
        made = true;
    }
    regmatch_t m;
    for (size_t i = 0; i < CG_REDACT_N_TOKEN_SHAPES; i++)
        CG_FUZZ_CHECK(regexec(&shapes[i], out, 1, &m, 0) != 0, "token shape %s left in '%.80s'",
                      text[i], out + (regexec(&shapes[i], out, 1, &m, 0) == 0 ? m.rm_so : 0));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 2);
    if (buf == NULL)
        return 0;
    memcpy(buf, data, size);
    buf[size] = buf[size + 1] = '\0';
    char *text = memchr(buf, '\0', size + 1);
    text++;
    char *pattern = text <= buf + size ? memchr(text, '\0', (size_t)(buf + size + 1 - text)) : NULL;
    if (pattern != NULL && pattern < buf + size)
        pattern++;
    else
        pattern = NULL;

    char *env[MAX_ENV + 1];
    size_t n_env = 0;
    for (char *line = buf; line != NULL && *line != '\0' && n_env < MAX_ENV;) {
        char *nl = strchr(line, '\n');
        if (nl != NULL)
            *nl = '\0';
        env[n_env++] = line;
        line = nl != NULL ? nl + 1 : NULL;
    }
    env[n_env] = NULL;

    struct cg_redact *r = NULL;
    struct cg_err err;
    cg_err_init(&err);
    CG_FUZZ_CHECK(cg_redact_new(env, &r, &err) == 0, "%s", err.msg);
    bool have_pattern = false;
    if (pattern != NULL && *pattern != '\0') {
        int rc = cg_redact_add_pattern(r, pattern, &err);
        CG_FUZZ_CHECK(rc == 0 || (rc == CG_EINPUT && strstr(err.msg, "--redact '") != NULL) ||
                          rc == CG_ENOMEM,
                      "%d %s", rc, err.msg);
        have_pattern = rc == 0;
    }
    char *out = cg_redact_apply(r, text);
    CG_FUZZ_CHECK(out != NULL, "out of memory on %zu bytes", strlen(text));
    for (size_t i = 0; i < n_env; i++) {
        const char *eq = strchr(env[i], '=');
        if (eq == NULL || !cg_redact_secret_name(env[i], (size_t)(eq - env[i])) ||
            strlen(eq + 1) < CG_REDACT_MIN_BYTES || strchr(eq + 1, '*') != NULL)
            continue;
        CG_FUZZ_CHECK(strstr(out, eq + 1) == NULL, "secret '%s' left in '%s'", eq + 1, out);
    }
    if (have_pattern) {
        regex_t re;
        regmatch_t m;
        if (regcomp(&re, pattern, REG_EXTENDED) == 0) {
            if (regexec(&re, out, 1, &m, 0) == 0 && m.rm_eo > m.rm_so) {
                /* a mark inside the match, or next to it: a word boundary (\b, \<, \>) looks
                 * one character past the match, and a mark there can make a boundary the input
                 * did not have ("ghh/" with '.\b' -> "gh***" matches 'h' before the mark) */
                bool has_mark = out[m.rm_eo] == '*' || (m.rm_so > 0 && out[m.rm_so - 1] == '*');
                for (regoff_t k = m.rm_so; k < m.rm_eo; k++)
                    has_mark = has_mark || out[k] == '*';
                /* a match the marks or the joins made is fine; one of the input's is not */
                if (!has_mark && strstr(text, "://") == NULL && n_env == 0)
                    CG_FUZZ_CHECK(false, "'%s' still matches '%s'", out, pattern);
            }
            regfree(&re);
        }
    }
    check_userinfo(out);
    check_token_shapes(out);
    free(out);
    cg_redact_free(r);
    free(buf);
    return 0;
}
