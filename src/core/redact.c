/*
 * redact: hiding secrets in the canary's command line and credentials in URLs (see redact.h).
 * Literal secrets are matched longest first, then the token shapes, then the --redact patterns,
 * then URL userinfo.
 */
#include "redact.h"

#include "buf.h"

#include <ctype.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

struct cg_redact {
    char **values; /* secret values, longest first */
    size_t n_values;
    regex_t shapes[CG_REDACT_N_TOKEN_SHAPES]; /* CG_REDACT_TOKEN_SHAPES */
    size_t n_shapes;
    regex_t patterns[CG_REDACT_MAX_PATTERNS];
    size_t n_patterns;
};

static struct cg_redact *g_default;
static bool g_default_made;

static bool has_word(const char *name, size_t len, const char *word)
{
    size_t w = strlen(word);
    for (size_t i = 0; i + w <= len; i++) {
        size_t k = 0;
        while (k < w && toupper((unsigned char)name[i + k]) == word[k])
            k++;
        if (k == w)
            return true;
    }
    return false;
}

bool cg_redact_secret_name(const char *name, size_t len)
{
    static const char *const words[] = {"TOKEN", "SECRET", "KEY", "PASSWORD", "PASSWD",
                                        "CREDENTIAL"};
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (has_word(name, len, words[i]))
            return true;
    return false;
}

static int by_length_desc(const void *a, const void *b)
{
    size_t la = strlen(*(char *const *)a), lb = strlen(*(char *const *)b);
    return la < lb ? 1 : la > lb ? -1 : 0;
}

int cg_redact_new(char *const *env, struct cg_redact **out, struct cg_err *err)
{
    struct cg_redact *r = calloc(1, sizeof(*r));
    size_t n = 0;
    *out = NULL;
    if (r == NULL)
        return cg_err_set(err, CG_ENOMEM, "out of memory");
    while (env != NULL && env[n] != NULL)
        n++;
    r->values = calloc(n + 1, sizeof(char *));
    if (r->values == NULL) {
        cg_redact_free(r);
        return cg_err_set(err, CG_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        const char *eq = strchr(env[i], '=');
        if (eq == NULL || !cg_redact_secret_name(env[i], (size_t)(eq - env[i])) ||
            strlen(eq + 1) < CG_REDACT_MIN_BYTES)
            continue;
        bool dup = false;
        for (size_t k = 0; k < r->n_values && !dup; k++)
            dup = strcmp(r->values[k], eq + 1) == 0;
        if (dup)
            continue;
        if ((r->values[r->n_values] = strdup(eq + 1)) == NULL) {
            cg_redact_free(r);
            return cg_err_set(err, CG_ENOMEM, "out of memory");
        }
        r->n_values++;
    }
    qsort(r->values, r->n_values, sizeof(char *), by_length_desc);
    static const char *const shapes[] = CG_REDACT_TOKEN_SHAPES;
    for (; r->n_shapes < CG_REDACT_N_TOKEN_SHAPES; r->n_shapes++)
        if (regcomp(&r->shapes[r->n_shapes], shapes[r->n_shapes], REG_EXTENDED) != 0) {
            cg_redact_free(r); /* only memory can fail: the shapes are fixed */
            return cg_err_set(err, CG_ENOMEM, "out of memory");
        }
    *out = r;
    return 0;
}

/* A pattern the regex engine compiles in bounded time and memory: at most
 * CG_REDACT_PATTERN_MAX_BYTES, no quantifier right after another ("a++", "a*{2}": undefined in
 * POSIX and exponential in glibc), repetition counts of at most 100. NULL when fine, else why. */
static const char *pattern_problem(const char *pattern)
{
    size_t n = strlen(pattern);
    if (n > CG_REDACT_PATTERN_MAX_BYTES)
        return "longer than 200 bytes";
    bool after_quantifier = false;
    for (size_t i = 0; i < n; i++) {
        char c = pattern[i];
        if (c == '\\') {
            i++;
            after_quantifier = false;
            continue;
        }
        if (c == '[') { /* a bracket expression: ']' first is a member */
            size_t j = i + 1;
            if (j < n && pattern[j] == '^')
                j++;
            if (j < n && pattern[j] == ']')
                j++;
            while (j < n && pattern[j] != ']')
                j++;
            i = j;
            after_quantifier = false;
            continue;
        }
        bool quantifier = c == '*' || c == '+' || c == '?' || c == '{';
        if (quantifier && after_quantifier)
            return "a quantifier right after another";
        if (c == '{') {
            char *end = NULL;
            for (const char *q = pattern + i + 1; *q != '\0' && *q != '}'; q = end) {
                long v = strtol(q, &end, 10);
                if (end == q)
                    end = (char *)q + 1;
                else if (v > 100)
                    return "a repetition count over 100";
            }
            const char *close = strchr(pattern + i, '}');
            i = close != NULL ? (size_t)(close - pattern) : n;
        }
        after_quantifier = quantifier;
    }
    return NULL;
}

int cg_redact_add_pattern(struct cg_redact *r, const char *pattern, struct cg_err *err)
{
    const char *problem = pattern_problem(pattern);
    if (problem != NULL)
        return cg_err_set(err, CG_EINPUT, "--redact '%.60s': %s", pattern, problem);
    if (r->n_patterns == CG_REDACT_MAX_PATTERNS)
        return cg_err_set(err, CG_EINPUT, "--redact '%.60s': at most %d patterns", pattern,
                          CG_REDACT_MAX_PATTERNS);
    regex_t *re = &r->patterns[r->n_patterns];
    int rc = regcomp(re, pattern, REG_EXTENDED);
    if (rc != 0) {
        char why[128];
        regerror(rc, re, why, sizeof(why));
        return cg_err_set(err, rc == REG_ESPACE ? CG_ENOMEM : CG_EINPUT,
                          "--redact '%.60s': not a regular expression: %s", pattern, why);
    }
    regmatch_t m;
    if (regexec(re, "", 1, &m, 0) == 0) {
        regfree(re);
        return cg_err_set(err, CG_EINPUT, "--redact '%.60s': matches empty text", pattern);
    }
    r->n_patterns++;
    return 0;
}

/* s with the literal secrets replaced, into out. */
static int redact_values(const struct cg_redact *r, const char *s, struct cg_buf *out)
{
    int rc = 0;
    for (const char *p = s; *p != '\0' && rc == 0;) {
        size_t hit = 0;
        for (size_t k = 0; r != NULL && k < r->n_values && hit == 0; k++) {
            size_t n = strlen(r->values[k]);
            if (strncmp(p, r->values[k], n) == 0)
                hit = n;
        }
        if (hit > 0) {
            rc = cg_buf_adds(out, CG_REDACT_MARK);
            p += hit;
        } else {
            rc = cg_buf_add(out, p, 1);
            p++;
        }
    }
    return rc;
}

/* s with every match of re replaced, into out. */
static int redact_pattern(const regex_t *re, const char *s, struct cg_buf *out)
{
    int rc = 0;
    int flags = 0;
    const char *p = s;
    regmatch_t m;
    while (rc == 0 && *p != '\0' && regexec(re, p, 1, &m, flags) == 0) {
        if (m.rm_eo <= m.rm_so) { /* an empty match: keep a byte and go on */
            rc = cg_buf_add(out, p, 1);
            p++;
        } else {
            rc = cg_buf_add(out, p, (size_t)m.rm_so);
            rc |= cg_buf_adds(out, CG_REDACT_MARK);
            p += m.rm_eo;
        }
        flags = REG_NOTBOL;
    }
    return rc | cg_buf_adds(out, p);
}

/* s with the userinfo of every URL ("://user:pass@") replaced, into out. */
static int redact_userinfo(const char *s, struct cg_buf *out)
{
    int rc = 0;
    const char *p = s;
    for (const char *sep; rc == 0 && (sep = strstr(p, "://")) != NULL;) {
        const char *auth = sep + 3;
        size_t n = strcspn(auth, "/?#\\ \t\r\n\"'<>");
        const char *at = NULL;
        for (size_t i = 0; i < n; i++)
            if (auth[i] == '@')
                at = auth + i;
        rc = cg_buf_add(out, p, (size_t)(auth - p));
        if (at != NULL) {
            rc |= cg_buf_adds(out, CG_REDACT_MARK);
            p = at;
        } else {
            p = auth;
        }
    }
    return rc | cg_buf_adds(out, p);
}

char *cg_redact_apply(const struct cg_redact *r, const char *s)
{
    size_t cap = 4 * strlen(s) + 64; /* a one-byte match becomes three */
    struct cg_buf a, b;
    cg_buf_init(&a, cap);
    cg_buf_init(&b, cap);
    int rc = redact_values(r, s, &a);
    size_t n_shapes = r != NULL ? r->n_shapes : 0;
    for (size_t k = 0; rc == 0 && r != NULL && k < n_shapes + r->n_patterns; k++) {
        cg_buf_reset(&b);
        rc = redact_pattern(k < n_shapes ? &r->shapes[k] : &r->patterns[k - n_shapes],
                            cg_buf_str(&a), &b);
        struct cg_buf t = a;
        a = b;
        b = t;
    }
    cg_buf_reset(&b);
    if (rc == 0)
        rc = redact_userinfo(cg_buf_str(&a), &b);
    char *res = rc == 0 ? strdup(cg_buf_str(&b)) : NULL;
    cg_buf_release(&a);
    cg_buf_release(&b);
    return res;
}

void cg_redact_free(struct cg_redact *r)
{
    if (r == NULL)
        return;
    for (size_t i = 0; r->values != NULL && i < r->n_values; i++)
        free(r->values[i]);
    free(r->values);
    for (size_t i = 0; i < r->n_shapes; i++)
        regfree(&r->shapes[i]);
    for (size_t i = 0; i < r->n_patterns; i++)
        regfree(&r->patterns[i]);
    free(r);
}

struct cg_redact *cg_redact_default(void)
{
    if (!g_default_made) {
        g_default_made = true;
        if (cg_redact_new(environ, &g_default, NULL) != 0)
            g_default = NULL;
    }
    return g_default;
}

void cg_redact_default_release(void)
{
    cg_redact_free(g_default);
    g_default = NULL;
    g_default_made = false;
}
