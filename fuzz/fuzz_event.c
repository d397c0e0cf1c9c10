/*
 * fuzz_event: the GitHub Actions event file ($GITHUB_EVENT_PATH) and the markdown report that
 * `canary-gate comment` posts.
 *
 * Input: the first byte picks the parser, the rest is its text. Properties: an event parses or
 * fails with CG_EINPUT; a parsed pull request has a positive number and a head SHA of hex digits;
 * a report's marker lines give a valid gate id and a reason without control characters; the
 * commit status description of that verdict and reason stays within GitHub's 140 characters;
 * the comment body starts with the gate's marker and stays within GitHub's limit of 65,536,
 * counted as UTF-16 code units (the stricter reading of its "characters"), whatever the cut had
 * to close.
 */
#include "fuzz.h"

#include "buf.h"
#include "github.h"

#include <ctype.h>

static size_t utf8_chars(const char *p, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += ((unsigned char)p[i] & 0xC0) != 0x80;
    return c;
}

/* UTF-16 code units of n bytes: a character each, and a second for each well-formed 4-byte
 * sequence (a character above U+FFFF, a surrogate pair). */
static size_t utf16_units(const char *p, size_t n)
{
    size_t u = utf8_chars(p, n);
    for (size_t i = 0; i + 3 < n; i++) {
        const unsigned char *b = (const unsigned char *)p + i;
        if (b[0] >= 0xF0 && b[0] <= 0xF4 && (b[1] & 0xC0) == 0x80 && (b[2] & 0xC0) == 0x80 &&
            (b[3] & 0xC0) == 0x80)
            u++;
    }
    return u;
}

static void event(const char *text, size_t len)
{
    struct cg_github_event ev;
    struct cg_err err;
    cg_err_init(&err);
    int rc = cg_github_event_parse(text, len, "event.json", &ev, &err);
    if (rc != 0) {
        CG_FUZZ_CHECK(rc == CG_EINPUT && strstr(err.msg, "event.json") != NULL, "%s", err.msg);
        return;
    }
    CG_FUZZ_CHECK(ev.pr_number >= 0, "pr %ld", ev.pr_number);
    size_t n = strnlen(ev.head_sha, sizeof(ev.head_sha));
    CG_FUZZ_CHECK(n < sizeof(ev.head_sha), "head_sha not terminated");
    for (size_t i = 0; i < n; i++)
        CG_FUZZ_CHECK(isxdigit((unsigned char)ev.head_sha[i]), "head_sha '%s'", ev.head_sha);
}

static void report(const char *text, size_t len)
{
    struct cg_github_report r;
    cg_github_report_parse(text, len, &r);
    size_t n = strnlen(r.id, sizeof(r.id));
    CG_FUZZ_CHECK(n < sizeof(r.id), "id not terminated");
    if (n > 0)
        CG_FUZZ_CHECK(cg_github_id_check(r.id, NULL) == 0, "id '%s'", r.id);
    CG_FUZZ_CHECK(r.verdict >= CG_GITHUB_VERDICT_NONE && r.verdict <= CG_GITHUB_RECORDED, "verdict");
    size_t rn = strnlen(r.reason, sizeof(r.reason));
    CG_FUZZ_CHECK(rn < sizeof(r.reason), "reason not terminated");
    for (size_t i = 0; i < rn; i++)
        CG_FUZZ_CHECK((unsigned char)r.reason[i] >= 0x20 && r.reason[i] != 0x7f, "reason byte");
    char desc[CG_GITHUB_REASON_MAX + 64];
    const char *state = cg_github_status_of(r.verdict, r.reason, desc, sizeof(desc));
    CG_FUZZ_CHECK(strcmp(state, "success") == 0 || strcmp(state, "failure") == 0 ||
                      strcmp(state, "error") == 0,
                  "state '%s'", state);
    CG_FUZZ_CHECK(utf8_chars(desc, strlen(desc)) <= CG_GITHUB_STATUS_MAX_CHARS,
                  "a status description of %zu characters", utf8_chars(desc, strlen(desc)));

    static const char *const ids[] = {NULL, "gpu-a100"};
    for (size_t i = 0; i < 2; i++) {
        struct cg_buf out;
        struct cg_err err;
        char marker[CG_GITHUB_ID_MAX + 32];
        cg_buf_init(&out, 8u << 20);
        cg_err_init(&err);
        CG_FUZZ_CHECK(cg_github_marker(ids[i], marker, sizeof(marker)) == 0, "marker");
        if (cg_github_comment_body(text, len, ids[i], &out, &err) == 0) {
            CG_FUZZ_CHECK(strncmp(cg_buf_str(&out), marker, strlen(marker)) == 0 &&
                              cg_buf_str(&out)[strlen(marker)] == '\n',
                          "the body does not start with the marker");
            CG_FUZZ_CHECK(utf16_units(out.data, out.len) <= CG_GITHUB_COMMENT_MAX_UNITS,
                          "a comment of %zu UTF-16 units", utf16_units(out.data, out.len));
            struct cg_github_report again;
            cg_github_report_parse(out.data, out.len, &again);
            CG_FUZZ_CHECK(again.has_marker && strcmp(again.id, ids[i] ? ids[i] : "") == 0,
                          "the body's marker does not read back");
        }
        cg_buf_release(&out);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    if (data[0] & 1)
        report(text, len);
    else
        event(text, len);
    return 0;
}
