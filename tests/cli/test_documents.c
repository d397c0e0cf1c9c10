/*
 * test_documents: every document the tool renders, through the built tool, against golden files
 * (tests/golden/doc_*): `show` (chart in ASCII and none), `compare`'s terminal table, markdown
 * report and JSON verdict, the notices of the main command (a baseline recorded, a canary that
 * failed: markdown and JSON), and the `aa` report (terminal and JSON). They pin what a user reads
 * so that moving the renderers between files is proven to change nothing.
 *
 * The artifacts are seeded fixtures, so `show` and `compare` are compared byte for byte. What
 * comes from a measurement (`aa`'s figures, a recorded baseline's step time) is masked first:
 * every number becomes '#' and runs of blanks one blank, so the golden holds the wording, the
 * order and the fields, not the figures. The temporary directory's path reads "<dir>".
 * CG_UPDATE_GOLDEN=1 rewrites the golden files instead of comparing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "artifact.h"
#include "buf.h"
#include "fixtures.h"
#include "fsutil.h"
#include "workdir.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRAIN CG_BINARY_DIR "/canary-train"

enum { EXACT, MASKED };

/* text with the directory's path replaced by "<dir>" and, when masked, numbers by '#' and runs
 * of blanks by one blank; in a buffer the caller releases. */
static void normalise(const struct cg_workdir *w, const char *text, int mode, struct cg_buf *o)
{
    size_t dn = strlen(w->path);
    cg_buf_init(o, 1 << 22);
    for (const char *p = text; *p;) {
        if (strncmp(p, w->path, dn) == 0) {
            assert_int_equal(cg_buf_adds(o, "<dir>"), 0);
            p += dn;
        } else if (mode == MASKED && isdigit((unsigned char)*p)) {
            while (isdigit((unsigned char)*p) || (*p == '.' && isdigit((unsigned char)p[1])) ||
                   ((*p == 'e' || *p == 'E') && (isdigit((unsigned char)p[1]) || p[1] == '-')))
                p++;
            assert_int_equal(cg_buf_adds(o, "#"), 0);
        } else if (mode == MASKED && *p == ' ') {
            while (*p == ' ')
                p++;
            assert_int_equal(cg_buf_adds(o, " "), 0);
        } else {
            assert_int_equal(cg_buf_add(o, p, 1), 0);
            p++;
        }
    }
    assert_non_null(cg_buf_str(o));
}

static void check_golden(const struct cg_workdir *w, const char *name, const char *text, int mode)
{
    char path[1024];
    struct cg_err err;
    struct cg_buf got;
    normalise(w, text, mode, &got);
    snprintf(path, sizeof(path), "%s/tests/golden/%s", CG_SOURCE_DIR, name);
    if (getenv("CG_UPDATE_GOLDEN") != NULL) {
        assert_int_equal(cg_file_write_atomic(path, got.data, got.len, &err), 0);
        cg_buf_release(&got);
        return;
    }
    char *want = NULL;
    size_t n = 0;
    cg_err_init(&err);
    if (cg_file_read(path, 1 << 22, &want, &n, &err) != 0)
        fail_msg("cannot read golden %s: %s (CG_UPDATE_GOLDEN=1 writes it)", name, err.msg);
    if (strcmp(want, cg_buf_str(&got)) != 0) {
        size_t i = 0;
        while (want[i] && want[i] == got.data[i])
            i++;
        fail_msg("%s differs from its golden at byte %zu: got \"%.80s\" want \"%.80s\"", name, i,
                 got.data + i, want + i);
    }
    free(want);
    cg_buf_release(&got);
}

/* Two seeded artifacts in the directory: base.json and a current side 12% slower, cur.json. */
static void write_pair(const struct cg_workdir *w)
{
    struct cg_err err;
    struct cg_artifact a;
    struct cg_fixture f = {5, 40, 2e7, 0.01, 0.02, 4096, 1LL << 30, 400000000, 4, 7};
    cg_err_init(&err);
    for (int side = 0; side < 2; side++) {
        cg_artifact_init(&a);
        if (side == 1) {
            f.mean_ns *= 1.12;
            f.seed = 8;
        }
        assert_int_equal(cg_fixture_make(&a, &f), 0);
        assert_int_equal(
            cg_artifact_save(cg_workdir_in(w, side ? "cur.json" : "base.json"), &a, &err), 0);
        cg_artifact_release(&a);
    }
}

static void test_documents__show(void **state)
{
    const struct cg_workdir *w = *state;
    struct cg_proc p;
    write_pair(w);
    const char *ascii[] = {"show", "base.json", "--ascii", "--ops", "3", NULL};
    assert_int_equal(cg_workdir_run(w, CG_TOOL_PATH, NULL, ascii, &p), 0);
    check_golden(w, "doc_show_ascii.txt", p.out, EXACT);
    const char *plain[] = {"show", "cur.json", "--no-chart", NULL};
    assert_int_equal(cg_workdir_run(w, CG_TOOL_PATH, NULL, plain, &p), 0);
    check_golden(w, "doc_show_no_chart.txt", p.out, EXACT);
}

static void test_documents__compare(void **state)
{
    const struct cg_workdir *w = *state;
    struct cg_proc p;
    write_pair(w);
    const char *args[] = {"compare", "base.json", "cur.json", "--report", "r.md",
                          "--json",  "v.json",    "--color",  "never",    NULL};
    assert_int_equal(cg_workdir_run(w, CG_TOOL_PATH, NULL, args, &p), 1);
    check_golden(w, "doc_compare_terminal.txt", p.out, EXACT);
    check_golden(w, "doc_compare_report.md", cg_workdir_read(w, "r.md"), EXACT);
    check_golden(w, "doc_compare_verdict.json", cg_workdir_read(w, "v.json"), EXACT);
}

static void test_documents__notice_recorded(void **state)
{
    const struct cg_workdir *w = *state;
    struct cg_proc p;
    const char *args[] = {"--baseline", "main.json", "--record-if-missing",
                          "--runs",     "1",         "--steps",
                          "4",          "--warmup",  "1",
                          "--report",   "n.md",      "--json",
                          "n.json",     NULL};
    assert_int_equal(cg_workdir_run(w, CG_TOOL_PATH, NULL, args, &p), 0);
    check_golden(w, "doc_notice_recorded.md", cg_workdir_read(w, "n.md"), MASKED);
    check_golden(w, "doc_notice_recorded.json", cg_workdir_read(w, "n.json"), MASKED);
}

static void test_documents__notice_canary_failed(void **state)
{
    const struct cg_workdir *w = *state;
    struct cg_proc p;
    write_pair(w);
    const char *args[] = {
        "--baseline", "base.json", "--runs",
        "1",          "--report",  "n.md",
        "--json",     "n.json",    "--",
        "/bin/sh",    "-c",        "echo loading the model; echo out of memory >&2; exit 7",
        NULL};
    assert_int_equal(cg_workdir_run(w, CG_TOOL_PATH, NULL, args, &p), 3);
    check_golden(w, "doc_notice_failed.md", cg_workdir_read(w, "n.md"), MASKED);
    check_golden(w, "doc_notice_failed.json", cg_workdir_read(w, "n.json"), MASKED);
}

static void test_documents__aa(void **state)
{
    const struct cg_workdir *w = *state;
    struct cg_proc p;
    const char *env[] = {"CANARY_GATE_NVML=0", NULL};
    const char *args[] = {"aa",       "--runs", "2",      "--steps",        "5",
                          "--warmup", "1",      "--json", "aa-report.json", NULL};
    assert_int_equal(cg_workdir_run(w, CG_TOOL_PATH, env, args, &p), 0);
    check_golden(w, "doc_aa.txt", p.out, MASKED);
    check_golden(w, "doc_aa.json", cg_workdir_read(w, "aa-report.json"), MASKED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_documents__show, cg_workdir_setup,
                                        cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(test_documents__compare, cg_workdir_setup,
                                        cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(test_documents__notice_recorded, cg_workdir_setup,
                                        cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(test_documents__notice_canary_failed, cg_workdir_setup,
                                        cg_workdir_teardown),
        cmocka_unit_test_setup_teardown(test_documents__aa, cg_workdir_setup, cg_workdir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
