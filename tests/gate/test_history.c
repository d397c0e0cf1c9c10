/*
 * test_history: main's history file: lines read back as written, unreadable lines kept verbatim
 * with a warning naming the file and line, files that cannot be read refused, the newest runs
 * read in bounded memory, the summary that keeps it bounded, entries from artifacts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "artifact_ranks.h"
#include "fixtures.h"
#include "floor.h"
#include "history.h"
#include "trend.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void run_entry(struct cg_history_entry *e, const char *commit, double mean_ms)
{
    cg_history_entry_init(e, CG_HIST_RUN);
    e->commit = strdup(commit);
    e->date = strdup("2026-11-24T10:00:00Z");
    e->environment = strdup("00112233445566ff");
    struct cg_history_value *v = &e->metric[CG_M_STEP_TIME_MEAN];
    *v = (struct cg_history_value){true, mean_ms * 1e6, mean_ms * 0.99e6, mean_ms * 1.01e6, 5};
    e->counts[CG_COUNT_KERNELS] = 370;
}

static char *render(const struct cg_history *h)
{
    struct cg_buf b;
    cg_buf_init(&b, 1 << 24);
    assert_int_equal(cg_history_render(h, &b), 0);
    return cg_buf_detach(&b);
}

static void test_history__lines_read_back_as_written(void **state)
{
    (void)state;
    struct cg_history h = {0}, back = {0};
    struct cg_history_entry e;
    run_entry(&e, "abc123", 20.5);
    assert_int_equal(cg_history_append(&h, &e), 0);
    cg_history_entry_release(&e);
    cg_history_entry_init(&e, CG_HIST_EVENT);
    e.event = CG_HEV_ACCEPT;
    e.commit = strdup("def456");
    e.date = strdup("2026-11-24T11:00:00Z");
    e.reason = strdup("the new attention kernel is worth 3% \"step time\"");
    e.who = strdup("octocat");
    assert_int_equal(cg_history_append(&h, &e), 0);
    cg_history_entry_release(&e);
    char *text = render(&h);
    assert_int_equal(cg_history_parse(text, strlen(text), "h.jsonl", &back), 0);
    assert_int_equal(back.n_warnings, 0);
    assert_int_equal(back.n, 2);
    const struct cg_history_entry *r = &back.entries[0], *a = &back.entries[1];
    assert_int_equal(r->type, CG_HIST_RUN);
    assert_string_equal(r->commit, "abc123");
    assert_string_equal(r->environment, "00112233445566ff");
    assert_true(r->metric[CG_M_STEP_TIME_MEAN].present);
    assert_true(fabs(r->metric[CG_M_STEP_TIME_MEAN].median - 20.5e6) < 1e-3);
    assert_int_equal(r->metric[CG_M_STEP_TIME_MEAN].runs, 5);
    assert_false(r->metric[CG_M_STEP_TIME_P95].present);
    assert_int_equal(r->counts[CG_COUNT_KERNELS], 370);
    assert_int_equal(r->counts[CG_COUNT_COPIES], -1);
    assert_int_equal(a->type, CG_HIST_EVENT);
    assert_int_equal(a->event, CG_HEV_ACCEPT);
    assert_string_equal(a->reason, "the new attention kernel is worth 3% \"step time\"");
    assert_string_equal(a->who, "octocat");
    /* and the same text again */
    char *again = render(&back);
    assert_string_equal(text, again);
    free(text);
    free(again);
    cg_history_release(&h);
    cg_history_release(&back);
}

/* Every line that cannot be read is skipped and named; the rest is kept; reading never fails. */
static void test_history__unreadable_lines_are_skipped_with_their_line_number(void **state)
{
    (void)state;
    const char *good = "{\"schema\":1,\"type\":\"run\",\"commit\":\"a1\",\"date\":\"d\","
                       "\"metrics\":{\"step_time_mean\":{\"median\":2,\"low\":1,\"high\":3,"
                       "\"runs\":5}}}";
    const struct {
        const char *line, *why;
    } bad[] = {
        {"{\"schema\":1,\"type\":\"run\",\"commit\":\"a2\"", "not a JSON object"},
        {"[1,2]", "not a JSON object"},
        {"{\"schema\":2,\"type\":\"run\",\"commit\":\"a\",\"date\":\"d\"}", "schema of another"},
        {"{\"schema\":1,\"type\":\"walk\",\"commit\":\"a\",\"date\":\"d\"}", "\"type\" is not"},
        {"{\"schema\":1,\"type\":\"run\",\"date\":\"d\"}", "no \"commit\""},
        {"{\"schema\":1,\"type\":\"run\",\"commit\":\"a\\u0007\",\"date\":\"d\"}",
         "control character"},
        {"{\"schema\":1,\"type\":\"run\",\"commit\":\"a\",\"date\":\"d\",\"metrics\":{"
         "\"step_time_mean\":{\"median\":2,\"low\":3,\"high\":4,\"runs\":5}}}",
         "0 < low <= median <= high"},
        /* a negative low (the site's axis spanned 200% of the level) */
        {"{\"schema\":1,\"type\":\"run\",\"commit\":\"a\",\"date\":\"d\",\"metrics\":{"
         "\"step_time_mean\":{\"median\":2,\"low\":-1.7e308,\"high\":4,\"runs\":5}}}",
         "0 < low <= median <= high"},
        {"{\"schema\":1,\"type\":\"run\",\"commit\":\"a\",\"date\":\"d\",\"counts\":"
         "{\"kernels\":-3}}",
         "counts.kernels is not a whole number"},
        {"{\"schema\":1,\"type\":\"event\",\"event\":\"accept\",\"commit\":\"a\",\"date\":\"d\"}",
         "no \"reason\""},
        {"{\"schema\":1,\"type\":\"summary\",\"commit\":\"a\",\"date\":\"d\",\"runs\":3,"
         "\"first_commit\":\"z\",\"first_date\":\"d\"}",
         "a summary after a run or event"},
    };
    size_t n_bad = sizeof(bad) / sizeof(bad[0]);
    struct cg_buf b;
    cg_buf_init(&b, 1 << 20);
    assert_int_equal(cg_buf_printf(&b, "%s\n\n", good), 0); /* a blank line is no problem */
    for (size_t i = 0; i < n_bad; i++)
        assert_int_equal(cg_buf_printf(&b, "%s\r\n%s\n", bad[i].line, good), 0);
    struct cg_history h = {0};
    assert_int_equal(cg_history_parse(b.data, b.len, "hist.jsonl", &h), 0);
    assert_int_equal(h.n, n_bad + 1);
    assert_int_equal(h.skipped, n_bad);
    assert_int_equal(h.n_warnings, n_bad);
    for (size_t i = 0; i < n_bad; i++) {
        char where[64];
        snprintf(where, sizeof(where), "hist.jsonl:%zu: not read, kept as it is: ", 3 + 2 * i);
        if (strncmp(h.warnings[i], where, strlen(where)) != 0 ||
            strstr(h.warnings[i], bad[i].why) == NULL)
            fail_msg("line %zu: warning '%s', expected '%s...%s'", 3 + 2 * i, h.warnings[i], where,
                     bad[i].why);
    }
    cg_history_release(&h);
    cg_buf_release(&b);
}

static void test_history__a_missing_file_is_an_empty_history(void **state)
{
    (void)state;
    struct cg_history h = {0};
    struct cg_err err;
    cg_err_init(&err);
    assert_int_equal(cg_history_load("/nonexistent/history.jsonl", &h, &err), 0);
    assert_int_equal(h.n, 0);
    assert_int_equal(cg_history_load("/", &h, &err), CG_EINPUT); /* a directory */
    assert_non_null(strstr(err.msg, "'/'"));
    /* an empty file holds no lines: an empty history too */
    char path[] = "/tmp/cg-history-empty-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(cg_history_load(path, &h, &err), 0);
    assert_int_equal(h.n, 0);
    unlink(path);
    cg_history_release(&h);
}

/* Past keep runs, the oldest fold into one summary first; the events among them go; the newest
 * keep runs and the events from the oldest of them on stay, in order. */
static void test_history__bounded_by_a_summary_of_the_oldest(void **state)
{
    (void)state;
    struct cg_history h = {0};
    struct cg_history_entry e;
    for (int i = 0; i < 10; i++) {
        char commit[16];
        snprintf(commit, sizeof(commit), "c%d", i);
        run_entry(&e, commit, 10.0 + i);
        assert_int_equal(cg_history_append(&h, &e), 0);
        cg_history_entry_release(&e);
        if (i == 2 || i == 7) {
            cg_history_entry_init(&e, CG_HIST_EVENT);
            e.event = CG_HEV_RESTART;
            e.commit = strdup(commit);
            e.date = strdup("d");
            assert_int_equal(cg_history_append(&h, &e), 0);
            cg_history_entry_release(&e);
        }
    }
    assert_int_equal(cg_history_bound(&h, 4), 0);
    /* summary of c0..c5 (the event after c2 dropped), then c6, c7, restart, c8, c9 */
    assert_int_equal(h.n, 6);
    const struct cg_history_entry *s = &h.entries[0];
    assert_int_equal(s->type, CG_HIST_SUMMARY);
    assert_int_equal(s->summarised, 6);
    assert_string_equal(s->first_commit, "c0");
    assert_string_equal(s->commit, "c5");
    assert_true(fabs(s->metric[CG_M_STEP_TIME_MEAN].median - 12.5e6) < 1e-3);
    assert_true(fabs(s->metric[CG_M_STEP_TIME_MEAN].low - 9.9e6) < 1e-3);
    assert_true(fabs(s->metric[CG_M_STEP_TIME_MEAN].high - 15.15e6) < 1e-3);
    assert_int_equal(s->metric[CG_M_STEP_TIME_MEAN].runs, 30);
    assert_string_equal(h.entries[1].commit, "c6");
    assert_int_equal(h.entries[3].type, CG_HIST_EVENT);
    assert_string_equal(h.entries[5].commit, "c9");
    /* bounding again folds the old summary in: 2 runs kept, summary of 8 */
    assert_int_equal(cg_history_bound(&h, 2), 0);
    assert_int_equal(h.n, 3);
    assert_int_equal(h.entries[0].summarised, 8);
    assert_string_equal(h.entries[0].first_commit, "c0");
    assert_string_equal(h.entries[0].commit, "c7");
    assert_string_equal(h.entries[1].commit, "c8");
    /* and it reads back */
    char *text = render(&h);
    struct cg_history back = {0};
    assert_int_equal(cg_history_parse(text, strlen(text), "x", &back), 0);
    assert_int_equal(back.n, 3);
    assert_int_equal(back.n_warnings, 0);
    assert_int_equal(back.entries[0].summarised, 8);
    free(text);
    cg_history_release(&back);
    cg_history_release(&h);
}

/* A run of gate gate_id (step time mean_ms) appended and the history bounded to keep, as
 * 'history append --gate-id gate_id --keep keep' does. */
static void append_bounded(struct cg_history *h, const char *gate_id, const char *commit,
                           double mean_ms, size_t keep)
{
    struct cg_history_entry e;
    run_entry(&e, commit, mean_ms);
    e.gate_id = strdup(gate_id);
    assert_int_equal(cg_history_append(h, &e), 0);
    cg_history_entry_release(&e);
    assert_int_equal(cg_history_bound(h, keep), 0);
}

/* The number of runs of gate_id in h, and its summary (NULL when it has none). */
static size_t runs_of(const struct cg_history *h, const char *gate_id,
                      const struct cg_history_entry **summary)
{
    size_t n = 0;
    *summary = NULL;
    for (size_t i = 0; i < h->n; i++) {
        if (!cg_history_of_gate(&h->entries[i], gate_id))
            continue;
        n += h->entries[i].type == CG_HIST_RUN;
        if (h->entries[i].type == CG_HIST_SUMMARY) {
            assert_null(*summary);
            *summary = &h->entries[i];
        }
    }
    return n;
}

/* Several gates in one file: --keep counts and folds each gate's runs apart. Before, the runs
 * of all gates were counted together: two runs of a100 then three of h100 with keep 3 left a
 * summary of a100's runs tagged a100 (its runs gone from its series), and with the gates
 * alternating one summary tagged with one gate held the midpoint of both GPUs' values. */
static void test_history__bounded_per_gate(void **state)
{
    (void)state;
    struct cg_history h = {0};
    append_bounded(&h, "a100", "a1", 10.0, 3);
    append_bounded(&h, "a100", "a2", 10.1, 3);
    for (int i = 1; i <= 3; i++) {
        char commit[8];
        snprintf(commit, sizeof(commit), "h%d", i);
        append_bounded(&h, "h100", commit, 20.0, 3);
    }
    const struct cg_history_entry *s;
    assert_int_equal(runs_of(&h, "a100", &s), 2); /* nothing folded: no gate has 4 runs */
    assert_null(s);
    assert_int_equal(runs_of(&h, "h100", &s), 3);
    assert_null(s);
    assert_int_equal(h.n, 5);
    cg_history_release(&h);

    /* alternating, with an accept of a100 among h100's older runs: each gate keeps its newest
     * 2 runs and folds its own older ones, its accept kept with its runs */
    memset(&h, 0, sizeof(h));
    for (int i = 0; i < 6; i++) {
        char commit[8];
        if (i == 5) {
            struct cg_history_entry e;
            cg_history_entry_init(&e, CG_HIST_EVENT);
            e.event = CG_HEV_ACCEPT;
            e.commit = strdup("a5");
            e.date = strdup("2026-11-24T10:00:00Z");
            e.gate_id = strdup("a100");
            e.reason = strdup("worth it");
            assert_int_equal(cg_history_append(&h, &e), 0);
            cg_history_entry_release(&e);
        }
        snprintf(commit, sizeof(commit), "a%d", i);
        append_bounded(&h, "a100", commit, 10.0 + 0.1 * i, 2);
        snprintf(commit, sizeof(commit), "h%d", i);
        append_bounded(&h, "h100", commit, 20.0 + 0.1 * i, 2);
    }
    assert_int_equal(runs_of(&h, "a100", &s), 2);
    assert_non_null(s);
    assert_int_equal(s->summarised, 4);
    assert_string_equal(s->first_commit, "a0");
    assert_string_equal(s->commit, "a3");
    /* a100's own runs, 10.0 to 10.3 ms, never h100's 20 ms: folded one at a time, the old
     * summary one more value, ((10.0 + 10.1) / 2 + 10.2) / 2 + 10.3) / 2 */
    assert_true(fabs(s->metric[CG_M_STEP_TIME_MEAN].median - 10.2125e6) < 1e3);
    assert_true(s->metric[CG_M_STEP_TIME_MEAN].high < 11e6);
    assert_int_equal(runs_of(&h, "h100", &s), 2);
    assert_non_null(s);
    assert_int_equal(s->summarised, 4);
    assert_string_equal(s->first_commit, "h0");
    assert_string_equal(s->commit, "h3");
    assert_true(fabs(s->metric[CG_M_STEP_TIME_MEAN].median - 20.2125e6) < 1e3);
    assert_true(s->metric[CG_M_STEP_TIME_MEAN].low > 19e6);
    size_t accepts = 0;
    for (size_t i = 0; i < h.n; i++)
        accepts += h.entries[i].type == CG_HIST_EVENT && h.entries[i].event == CG_HEV_ACCEPT &&
                   cg_history_of_gate(&h.entries[i], "a100");
    assert_int_equal(accepts, 1);
    /* the summaries first; written and read back without a warning */
    assert_int_equal(h.entries[0].type, CG_HIST_SUMMARY);
    assert_int_equal(h.entries[1].type, CG_HIST_SUMMARY);
    char *text = render(&h);
    struct cg_history back = {0};
    assert_int_equal(cg_history_parse(text, strlen(text), "h.jsonl", &back), 0);
    if (back.n_warnings != 0 || back.n != h.n)
        fail_msg("read back with %zu warnings (%s):\n%s", back.n_warnings,
                 back.n_warnings ? back.warnings[0] : "", text);
    assert_int_equal(runs_of(&back, "h100", &s), 2);
    assert_non_null(s);
    free(text);
    cg_history_release(&back);
    cg_history_release(&h);
    /* a second summary of one gate is not read (kept as it is) */
    const char *two = "{\"schema\":1,\"type\":\"summary\",\"commit\":\"a\",\"date\":\"d\","
                      "\"gate_id\":\"g\",\"runs\":3,\"first_commit\":\"z\",\"first_date\":\"d\"}\n"
                      "{\"schema\":1,\"type\":\"summary\",\"commit\":\"b\",\"date\":\"d\","
                      "\"gate_id\":\"g\",\"runs\":3,\"first_commit\":\"z\",\"first_date\":\"d\"}\n";
    assert_int_equal(cg_history_parse(two, strlen(two), "h.jsonl", &back), 0);
    assert_int_equal(back.n, 1);
    assert_int_equal(back.n_warnings, 1);
    assert_non_null(
        strstr(back.warnings[0], "h.jsonl:2: not read, kept as it is: a second summary"));
    cg_history_release(&back);
}

/* A run entry from an artifact: the median of the runs, an order-statistics interval. */
static void test_history__entry_from_an_artifact(void **state)
{
    (void)state;
    struct cg_artifact a;
    cg_artifact_init(&a);
    struct cg_fixture f = {.runs = 9,
                           .steps = 20,
                           .mean_ns = 10e6,
                           .run_noise = 0.05,
                           .step_noise = 0.01,
                           .tokens = 4096,
                           .peak_device_bytes = 1 << 30,
                           .peak_host_rss_bytes = 1 << 29,
                           .n_ops = 2,
                           .seed = 7};
    assert_int_equal(cg_fixture_make(&a, &f), 0);
    struct cg_history_entry e;
    assert_int_equal(cg_trend_entry(&a, "abc", "2026-11-24T00:00:00Z", "h100", &e), 0);
    double v[9];
    for (size_t i = 0; i < 9; i++)
        v[i] = a.runs[i].summary.step_time_mean_ns;
    for (size_t i = 1; i < 9; i++) /* sort */
        for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    const struct cg_history_value *m = &e.metric[CG_M_STEP_TIME_MEAN];
    assert_true(m->present);
    assert_int_equal(m->runs, 9);
    assert_true(m->median == v[4]);
    /* n = 9: [x(2), x(8)] covers the median with 1 - 2 * 10/512 = 96%; [x(3), x(7)] only 82% */
    assert_true(m->low == v[1]);
    assert_true(m->high == v[7]);
    assert_true(e.metric[CG_M_PEAK_DEVICE_MEMORY].present);
    assert_string_equal(e.gate_id, "h100");
    assert_int_equal(strlen(e.environment), 16);
    /* the environment id follows the machine, not the canary */
    char *id = cg_trend_env_id(&a);
    free(a.env.canary_hash);
    a.env.canary_hash = strdup("another");
    char *same = cg_trend_env_id(&a);
    free(a.env.cuda_version);
    a.env.cuda_version = strdup("12.9");
    char *other = cg_trend_env_id(&a);
    assert_string_equal(id, same);
    assert_string_not_equal(id, other);
    free(id);
    free(same);
    free(other);
    /* the node shape is the machine too (runs of 1 node of 4 ranks, then 2 nodes of 2, landed in
     * one segment and were compared); one process, said or not, keeps the id it had */
    char *single = cg_trend_env_id(&a);
    for (size_t r = 0; r < a.n_runs; r++)
        a.runs[r].ranks_recorded = true;
    char *said = cg_trend_env_id(&a);
    assert_string_equal(single, said);
    char *ids[2];
    for (int shape = 0; shape < 2; shape++) {
        for (size_t r = 0; r < a.n_runs; r++) {
            cg_ranks_free(a.runs[r].ranks, a.runs[r].n_ranks);
            a.runs[r].ranks = calloc(4, sizeof(struct cg_rank));
            a.runs[r].n_ranks = 4;
            for (int k = 0; k < 4; k++) {
                a.runs[r].ranks[k].rank = k;
                a.runs[r].ranks[k].node = strdup(shape == 0 || k < 2 ? "n1" : "n2");
            }
        }
        ids[shape] = cg_trend_env_id(&a);
    }
    assert_string_not_equal(ids[0], ids[1]);
    assert_string_not_equal(ids[0], single);
    free(single);
    free(said);
    free(ids[0]);
    free(ids[1]);
    cg_history_entry_release(&e);
    assert_int_equal(cg_trend_entry(&a, "", "d", NULL, &e), CG_EINPUT);
    cg_artifact_release(&a);
}

/* The floor is recorded as the gate takes a side's floor: the median of the fast runs' floors
 * (cg_floor_side_ns), so runs that met a spell of load do not move it; its interval comes from
 * the fast runs. */
static void test_history__floor_is_the_runs_floor_as_one_side(void **state)
{
    (void)state;
    struct cg_artifact a;
    cg_artifact_init(&a);
    struct cg_fixture f = {.runs = 9, .steps = 20, .mean_ns = 10e6, .run_noise = 0.02,
                           .step_noise = 0.01, .tokens = 4096, .seed = 11};
    assert_int_equal(cg_fixture_make(&a, &f), 0);
    for (size_t i = 0; i < 4; i++) { /* four runs in a spell of load: 40% slower throughout */
        for (size_t s = 0; s < a.runs[i].n_steps; s++)
            a.runs[i].steps[s].wall_ns = (int64_t)((double)a.runs[i].steps[s].wall_ns * 1.4);
        cg_run_summarize(&a.runs[i]);
    }
    double fast[9];
    size_t k = 0;
    for (size_t i = 4; i < 9; i++)
        fast[k++] = cg_floor_run_ns(&a.runs[i]);
    for (size_t i = 1; i < k; i++) /* sort */
        for (size_t j = i; j > 0 && fast[j - 1] > fast[j]; j--) {
            double t = fast[j];
            fast[j] = fast[j - 1];
            fast[j - 1] = t;
        }
    struct cg_history_entry e;
    assert_int_equal(cg_trend_entry(&a, "abc", "2026-11-24T00:00:00Z", NULL, &e), 0);
    const struct cg_history_value *m = &e.metric[CG_M_STEP_TIME_FLOOR];
    assert_true(m->present);
    assert_int_equal(m->runs, 9);
    assert_float_equal(m->median, cg_floor_side_ns(a.runs, a.n_runs), 1e-9);
    assert_float_equal(m->median, fast[2], 1e-9);
    /* 5 fast runs: [x(1), x(5)] of them covers their median with 94% */
    assert_float_equal(m->low, fast[0], 1e-9);
    assert_float_equal(m->high, fast[4], 1e-9);
    cg_history_entry_release(&e);
    cg_artifact_release(&a);
}

static void append_run(struct cg_history *h, const char *commit, double mean_ms, const char *gate)
{
    struct cg_history_entry e;
    run_entry(&e, commit, mean_ms);
    e.gate_id = gate ? strdup(gate) : NULL;
    assert_int_equal(cg_history_append(h, &e), 0);
    cg_history_entry_release(&e);
}

static void append_accept(struct cg_history *h, const char *commit, const char *reason,
                          const char *gate)
{
    struct cg_history_entry e;
    cg_history_entry_init(&e, CG_HIST_EVENT);
    e.event = CG_HEV_ACCEPT;
    e.commit = strdup(commit);
    e.date = strdup("2026-11-24T12:00:00Z");
    e.reason = strdup(reason);
    e.who = strdup("octocat");
    e.gate_id = gate ? strdup(gate) : NULL;
    assert_int_equal(cg_history_append(h, &e), 0);
    cg_history_entry_release(&e);
}

/* The accept a pull request's report mentions: the gate's newest, while fewer than window runs
 * of other commits were recorded after it; another gate's accept is not this gate's. */
static void test_history__a_recent_accept_is_found_for_a_while(void **state)
{
    (void)state;
    struct cg_history h = {0};
    size_t since = 99;
    append_run(&h, "c1", 10, NULL);
    assert_null(cg_history_recent_accept(&h, NULL, 3, &since));
    append_accept(&h, "c2", "new attention kernel", NULL);
    append_run(&h, "c2", 11, NULL); /* the accepted commit's own run */
    append_accept(&h, "c2", "another gate's", "a100");
    const struct cg_history_entry *a = cg_history_recent_accept(&h, NULL, 3, &since);
    assert_non_null(a);
    assert_string_equal(a->reason, "new attention kernel");
    assert_int_equal(since, 0);
    append_run(&h, "c3", 11, NULL);
    append_run(&h, "c4", 11, "a100"); /* another gate's run does not count */
    append_run(&h, "c5", 11, NULL);
    assert_non_null(cg_history_recent_accept(&h, NULL, 3, &since));
    assert_int_equal(since, 2);
    append_run(&h, "c6", 11, NULL);
    assert_null(cg_history_recent_accept(&h, NULL, 3, &since));
    a = cg_history_recent_accept(&h, "a100", 3, &since);
    assert_non_null(a);
    assert_string_equal(a->reason, "another gate's");
    assert_int_equal(since, 1);
    cg_history_release(&h);
}

/* A change point is accepted by an accept event between its two runs, or one recorded after
 * the first run of the change for that run's commit (canary-gate accept after publishing). */
static void test_history__an_accept_after_the_run_of_its_commit_marks_the_change(void **state)
{
    (void)state;
    for (int after = 0; after < 2; after++) {
        struct cg_history h = {0};
        char commit[16];
        for (int i = 0; i < 40; i++) {
            snprintf(commit, sizeof(commit), "c%03d", i);
            if (i == 20 && !after)
                append_accept(&h, commit, "worth it", NULL);
            append_run(&h, commit, (i < 20 ? 10.0 : 11.0) * (1 + 0.002 * (i % 5)), NULL);
            if (i == 20 && after)
                append_accept(&h, commit, "worth it", NULL);
            if (i == 30)
                append_accept(&h, "c011", "an old commit's accept marks nothing", NULL);
        }
        struct cg_trend_report r;
        assert_int_equal(cg_trend_check(&h, NULL, NULL, &r), 0);
        size_t found = 0;
        for (size_t i = 0; i < r.n_changes; i++) {
            const struct cg_trend_change *c = &r.changes[i];
            if (c->metric != CG_M_STEP_TIME_MEAN)
                continue;
            found++;
            assert_string_equal(c->after->commit, "c020");
            assert_non_null(c->accepted);
            assert_string_equal(c->accepted->reason, "worth it");
        }
        assert_int_equal(found, 1);
        cg_trend_report_release(&r);
        cg_history_release(&h);
    }
}

/* Written atomically: a history that cannot be written leaves the old file whole. */
static void test_history__saved_whole_or_not_at_all(void **state)
{
    (void)state;
    char dir[] = "/tmp/cg-history-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof(path), "%s/h.jsonl", dir);
    struct cg_history h = {0};
    struct cg_history_entry e;
    run_entry(&e, "a1", 5);
    assert_int_equal(cg_history_append(&h, &e), 0);
    cg_history_entry_release(&e);
    struct cg_err err;
    cg_err_init(&err);
    assert_int_equal(cg_history_save(path, &h, &err), 0);
    struct cg_history back = {0};
    assert_int_equal(cg_history_load(path, &back, &err), 0);
    assert_int_equal(back.n, 1);
    cg_history_release(&back);
    char bad[160];
    snprintf(bad, sizeof(bad), "%s/missing/h.jsonl", dir);
    assert_int_equal(cg_history_save(bad, &h, &err), CG_EIO);
    assert_non_null(strstr(err.msg, bad));
    cg_history_release(&h);
    unlink(path);
    rmdir(dir);
}

/* Lines that cannot be read (damaged, of a newer version) and fields this version does not know
 * are written back as they were, in their places, through an append and a bound. */
static void test_history__unreadable_lines_are_kept_in_place_when_written(void **state)
{
    (void)state;
    const char *newer = "{\"schema\":2,\"type\":\"run\",\"commit\":\"n1\",\"date\":\"d\"}";
    const char *damaged = "{\"schema\":1,\"type\":\"run\"\n"; /* with its line break */
    const char *unknown = "{\"schema\":1,\"type\":\"run\",\"commit\":\"u1\",\"date\":\"d\","
                          "\"metrics\":{\"step_time_mean\":{\"median\":2,\"low\":1,\"high\":3,"
                          "\"runs\":5}},\"counts\":{\"kernels\":3,\"warp_stalls\":7},"
                          "\"notes\":\"kept\"}";
    struct cg_buf b;
    cg_buf_init(&b, 1 << 20);
    for (int i = 0; i < 4; i++)
        assert_int_equal(cg_buf_printf(&b,
                                       "{\"schema\":1,\"type\":\"run\",\"commit\":\"c%d\","
                                       "\"date\":\"d\"}\n",
                                       i),
                         0);
    assert_int_equal(cg_buf_printf(&b, "%s\n%s%s\n", newer, damaged, unknown), 0);
    struct cg_history h = {0};
    assert_int_equal(cg_history_parse(b.data, b.len, "h.jsonl", &h), 0);
    assert_int_equal(h.read, 5);
    assert_int_equal(h.skipped, 2);
    struct cg_history_entry e;
    run_entry(&e, "c9", 20);
    assert_int_equal(cg_history_append(&h, &e), 0);
    cg_history_entry_release(&e);
    char *text = render(&h);
    const char *pn = strstr(text, newer), *pd = strstr(text, damaged), *pu = strstr(text, unknown);
    const char *p3 = strstr(text, "\"commit\":\"c3\""), *p9 = strstr(text, "\"commit\":\"c9\"");
    if (!pn || !pd || !pu || !p3 || !p9 || !(p3 < pn && pn < pd && pd < pu && pu < p9))
        fail_msg("lines lost or moved:\n%s", text);
    free(text);
    /* folded: the summary first, then the unreadable lines, then the runs kept */
    assert_int_equal(cg_history_bound(&h, 2), 0);
    text = render(&h);
    pn = strstr(text, newer), pd = strstr(text, damaged), pu = strstr(text, unknown);
    if (strncmp(text, "{\"schema\":1,\"type\":\"summary\"", 28) != 0 || !pn || !pd || !pu ||
        !(pn < pd && pd < pu) || strstr(text, "\"type\":\"run\",\"commit\":\"c3\"") != NULL)
        fail_msg("after the bound:\n%s", text);
    free(text);
    cg_history_release(&h);
    /* nothing in it is a history: refused for a rewrite, naming the file and the first line */
    struct cg_err err;
    cg_err_init(&err);
    assert_int_equal(cg_history_parse(damaged, strlen(damaged), "same.json", &h), 0);
    assert_int_equal(cg_history_check_rewrite(&h, "same.json", &err), CG_EINPUT);
    assert_non_null(strstr(err.msg, "'same.json' is not a history"));
    assert_non_null(strstr(err.msg, "line 1: not a JSON object"));
    cg_history_release(&h);
    cg_buf_release(&b);
}

/* Only a file that does not exist is an empty history: one that cannot be read is refused with
 * the reason, and a FIFO at once (never waited on). */
static void test_history__a_file_that_cannot_be_read_is_refused(void **state)
{
    (void)state;
    char dir[] = "/tmp/cg-hist-XXXXXX", path[128], loop[128], fifo[128];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/h.jsonl/x", dir); /* below a file */
    snprintf(loop, sizeof(loop), "%s/loop", dir);
    snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
    char file[128];
    snprintf(file, sizeof(file), "%s/h.jsonl", dir);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fputs("{\"schema\":1,\"type\":\"run\",\"commit\":\"c\",\"date\":\"d\"}\n", f);
    fclose(f);
    assert_int_equal(symlink("loop", loop), 0);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    const char *bad[] = {path, loop, fifo, dir};
    const char *why[] = {"Not a directory", "symbolic links", "a FIFO, not a regular file",
                         "a directory, not a regular file"};
    for (size_t i = 0; i < 4; i++) {
        struct cg_history h = {0};
        struct cg_err err;
        cg_err_init(&err);
        alarm(10); /* a FIFO waited on ends the test */
        assert_int_equal(cg_history_load(bad[i], &h, &err), CG_EINPUT);
        if (strstr(err.msg, bad[i]) == NULL || strstr(err.msg, why[i]) == NULL)
            fail_msg("'%s': %s", bad[i], err.msg);
        cg_err_init(&err);
        assert_int_equal(cg_history_load_newest(bad[i], 10, &h, &err), CG_EINPUT);
        assert_non_null(strstr(err.msg, why[i]));
        alarm(0);
        cg_history_release(&h);
    }
    if (geteuid() != 0) { /* root reads whatever the mode */
        struct cg_history h = {0};
        struct cg_err err;
        cg_err_init(&err);
        assert_int_equal(chmod(file, 0200), 0);
        assert_int_equal(cg_history_load(file, &h, &err), CG_EINPUT);
        assert_non_null(strstr(err.msg, "Permission denied"));
        cg_history_release(&h);
    }
    unlink(file);
    unlink(loop);
    unlink(fifo);
    rmdir(dir);
}

/* A long history read newest first in bounded memory: the newest runs and the events after the
 * newest run left out, the rest one summary that counts them. */
static void test_history__newest_runs_are_read_in_bounded_memory(void **state)
{
    (void)state;
    char path[] = "/tmp/cg-hist-newest-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    for (int i = 0; i < 5000; i++) {
        fprintf(f, "{\"schema\":1,\"type\":\"run\",\"commit\":\"c%d\",\"date\":\"d%d\"}\n", i, i);
        if (i == 4899)
            fputs("{\"schema\":1,\"type\":\"event\",\"event\":\"restart\",\"commit\":\"c4900\","
                  "\"date\":\"d\",\"reason\":\"r\"}\n",
                  f);
        if (i % 1000 == 7)
            fputs("not json\n", f);
    }
    fclose(f);
    struct cg_history h = {0};
    struct cg_err err;
    cg_err_init(&err);
    assert_int_equal(cg_history_load_newest(path, 100, &h, &err), 0);
    assert_int_equal(h.n, 102); /* summary, the restart, 100 runs */
    assert_int_equal(h.left_out, 4900);
    assert_int_equal(h.skipped, 5);
    assert_true(h.cap <= 4 * 100 + 2048); /* never the whole file */
    assert_int_equal(h.entries[0].type, CG_HIST_SUMMARY);
    assert_int_equal(h.entries[0].summarised, 4900);
    assert_string_equal(h.entries[0].first_commit, "c0");
    assert_string_equal(h.entries[0].commit, "c4899");
    assert_int_equal(h.entries[1].type, CG_HIST_EVENT);
    assert_string_equal(h.entries[2].commit, "c4900");
    assert_string_equal(h.entries[101].commit, "c4999");
    assert_int_equal(cg_history_save(path, &h, &err), CG_EINTERNAL); /* never written back */
    cg_history_release(&h);
    /* fewer runs than kept: everything, no summary */
    cg_err_init(&err);
    assert_int_equal(cg_history_load_newest(path, 6000, &h, &err), 0);
    assert_int_equal(h.n, 5001);
    assert_int_equal(h.left_out, 0);
    cg_history_release(&h);
    unlink(path);
}

/* Writes lines to a new temporary file; its path into path (a mkstemp template). */
static void write_lines(char *path, const char *const *lines, size_t n)
{
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s\n", lines[i]);
    assert_int_equal(fclose(f), 0);
}

#define GATE_RUN(gate, commit)                                                                     \
    "{\"schema\":1,\"type\":\"run\",\"commit\":\"" commit "\",\"date\":\"d\",\"gate_id\":\"" gate  \
    "\",\"metrics\":{\"step_time_mean\":{\"median\":10,\"low\":9,\"high\":11,\"runs\":5}}}"
#define GATE_SUMMARY(gate, first, commit, runs)                                                    \
    "{\"schema\":1,\"type\":\"summary\",\"commit\":\"" commit                                      \
    "\",\"date\":\"d\",\"gate_id\":\"" gate "\",\"runs\":" #runs ",\"first_commit\":\"" first      \
    "\",\"first_date\":\"d0\"}"

/* A history that two gates share, as 'history append --keep 5' leaves it after 6 runs of h100
 * then 16 of a100: the newest runs of each gate are read, its older ones one summary of it.
 * Before, the newest runs of all gates were read together: with keep 5 not one run of h100. */
static void test_history__newest_runs_of_each_gate_are_read(void **state)
{
    (void)state;
    const char *lines[] = {
        GATE_SUMMARY("h100", "h1", "h1", 1),
        GATE_SUMMARY("a100", "a1", "a11", 11),
        GATE_RUN("h100", "h2"),
        GATE_RUN("h100", "h3"),
        "{\"schema\":1,\"type\":\"event\",\"event\":\"accept\",\"commit\":\"h4\",\"date\":\"d\","
        "\"gate_id\":\"h100\",\"reason\":\"r\"}",
        GATE_RUN("h100", "h4"),
        GATE_RUN("h100", "h5"),
        GATE_RUN("h100", "h6"),
        GATE_RUN("a100", "a12"),
        GATE_RUN("a100", "a13"),
        GATE_RUN("a100", "a14"),
        GATE_RUN("a100", "a15"),
        GATE_RUN("a100", "a16"),
    };
    char path[] = "/tmp/cg-hist-gates-XXXXXX";
    write_lines(path, lines, sizeof(lines) / sizeof(lines[0]));
    struct cg_history h = {0};
    struct cg_err err;
    cg_err_init(&err);
    const struct cg_history_entry *s;
    assert_int_equal(cg_history_load_newest(path, 5, &h, &err), 0);
    assert_int_equal(h.left_out, 0);
    assert_int_equal(runs_of(&h, "h100", &s), 5);
    assert_non_null(s);
    assert_int_equal(s->summarised, 1);
    assert_int_equal(runs_of(&h, "a100", &s), 5);
    assert_int_equal(s->summarised, 11);
    assert_int_equal(cg_history_gate_check(&h, "h100", path, &err), 0);
    cg_history_release(&h);

    /* keep 3: each gate's older runs and its summary are one summary of that gate, first */
    assert_int_equal(cg_history_load_newest(path, 3, &h, &err), 0);
    assert_int_equal(h.left_out, 16);
    assert_int_equal(h.entries[0].type, CG_HIST_SUMMARY);
    assert_int_equal(h.entries[1].type, CG_HIST_SUMMARY);
    assert_int_equal(runs_of(&h, "h100", &s), 3);
    assert_non_null(s);
    assert_int_equal(s->summarised, 3);
    assert_string_equal(s->first_commit, "h1");
    assert_string_equal(s->commit, "h3");
    assert_int_equal(runs_of(&h, "a100", &s), 3);
    assert_non_null(s);
    assert_int_equal(s->summarised, 13);
    assert_string_equal(s->first_commit, "a1");
    assert_string_equal(s->commit, "a13");
    assert_int_equal(h.n, 9); /* two summaries, the accept, 3 + 3 runs */
    assert_int_equal(h.entries[2].type, CG_HIST_EVENT);
    assert_string_equal(h.entries[3].commit, "h4");
    assert_string_equal(h.entries[8].commit, "a16");
    cg_history_release(&h);

    /* one gate: its entries alone, the other gates named */
    assert_int_equal(cg_history_load_gate(path, "h100", 3, &h, &err), 0);
    assert_int_equal(h.n, 5); /* its summary, the accept, h4 to h6 */
    assert_int_equal(h.left_out, 3);
    assert_int_equal(runs_of(&h, "h100", &s), 3);
    assert_string_equal(s->first_commit, "h1");
    assert_int_equal(h.n_other_gates, 1);
    assert_string_equal(h.other_gates[0], "a100");
    assert_int_equal(cg_history_gate_check(&h, "h100", path, &err), 0);
    cg_history_release(&h);
    assert_int_equal(cg_history_load_gate(path, "a100", 1000, &h, &err), 0);
    assert_int_equal(h.n, 6);
    assert_int_equal(h.left_out, 0);
    assert_int_equal(runs_of(&h, "a100", &s), 5);
    assert_int_equal(s->summarised, 11);
    cg_history_release(&h);
    /* a gate of which the file holds no run: named with the gates there */
    assert_int_equal(cg_history_load_gate(path, "H100", 3, &h, &err), 0);
    assert_int_equal(h.n, 0);
    assert_int_equal(cg_history_gate_check(&h, "H100", path, &err), CG_EINPUT);
    assert_non_null(strstr(err.msg, "no run of gate 'H100' in '"));
    assert_non_null(strstr(err.msg, "' (its gates: h100, a100)"));
    cg_history_release(&h);
    assert_int_equal(cg_history_load_gate(path, NULL, 3, &h, &err), 0);
    assert_int_equal(cg_history_gate_check(&h, NULL, path, &err), CG_EINPUT);
    assert_non_null(strstr(err.msg, "no run without a gate id in"));
    cg_history_release(&h);
    unlink(path);
}

/* Gates interleaved over a long file: each keeps its newest runs in memory bounded per gate,
 * one gate read alone in the memory of one; past CG_HISTORY_MAX_GATES gates the runs of the
 * others are left out and their gates named. */
static void test_history__gates_are_read_in_bounded_memory(void **state)
{
    (void)state;
    char path[] = "/tmp/cg-hist-gates-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fputs("{\"schema\":1,\"type\":\"run\",\"commit\":\"idle\",\"date\":\"d\","
          "\"gate_id\":\"v100\"}\n",
          f);
    for (int i = 0; i < 6000; i++)
        fprintf(f,
                "{\"schema\":1,\"type\":\"run\",\"commit\":\"c%d\",\"date\":\"d\","
                "\"gate_id\":\"%s\"}\n",
                i, i % 3 == 0 ? "h100" : "a100");
    assert_int_equal(fclose(f), 0);
    struct cg_history h = {0};
    struct cg_err err;
    cg_err_init(&err);
    const struct cg_history_entry *s;
    assert_int_equal(cg_history_load_newest(path, 100, &h, &err), 0);
    assert_int_equal(runs_of(&h, "h100", &s), 100);
    assert_int_equal(s->summarised, 1900);
    assert_string_equal(s->first_commit, "c0");
    assert_string_equal(s->commit, "c5697");
    assert_int_equal(runs_of(&h, "a100", &s), 100);
    assert_int_equal(s->summarised, 3900);
    assert_int_equal(runs_of(&h, "v100", &s), 1);
    assert_null(s);
    assert_int_equal(h.left_out, 5800);
    assert_string_equal(h.entries[h.n - 1].commit, "c5999");
    assert_true(h.cap <= 3 * (4 * 100 + 2048)); /* never the whole file */
    cg_history_release(&h);
    /* the idle gate, its one run 6000 lines before the end */
    assert_int_equal(cg_history_load_gate(path, "v100", 100, &h, &err), 0);
    assert_int_equal(h.n, 1);
    assert_string_equal(h.entries[0].commit, "idle");
    assert_true(h.cap <= 4 * 100 + 2048);
    cg_history_release(&h);
    assert_int_equal(cg_history_load_gate(path, "h100", 100, &h, &err), 0);
    assert_int_equal(h.n, 101);
    assert_int_equal(h.left_out, 1900);
    assert_true(h.cap <= 4 * 100 + 2048);
    cg_history_release(&h);
    unlink(path);

    /* more gates than are read: the first CG_HISTORY_MAX_GATES, the others named */
    snprintf(path, sizeof(path), "%s", "/tmp/cg-hist-gates-XXXXXX");
    fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_non_null(f = fdopen(fd, "w"));
    for (int i = 0; i < CG_HISTORY_MAX_GATES + 11; i++)
        fprintf(f,
                "{\"schema\":1,\"type\":\"run\",\"commit\":\"c%d\",\"date\":\"d\","
                "\"gate_id\":\"g%d\"}\n",
                i, i);
    fputs("{\"schema\":1,\"type\":\"run\",\"commit\":\"x\",\"date\":\"d\"}\n", f);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(cg_history_load_newest(path, 10, &h, &err), 0);
    assert_int_equal(h.n, CG_HISTORY_MAX_GATES);
    assert_int_equal(h.n_other_gates, CG_HISTORY_GATES_NAMED);
    char first[16];
    snprintf(first, sizeof(first), "g%d", CG_HISTORY_MAX_GATES);
    assert_string_equal(h.other_gates[0], first);
    assert_true(h.other_gates_more);
    assert_true(h.other_no_gate);
    cg_history_release(&h);
    unlink(path);
}

/* Dates written by 'history append' and 'accept' are ISO 8601 times. */
static void test_history__dates_are_iso_8601(void **state)
{
    (void)state;
    const char *good[] = {"2026-11-20T14:03:00Z", "2026-11-20T14:03Z", "2024-02-29T00:00:00Z",
                          "2026-11-20T14:03:00.123456+05:30", "2026-11-20T23:59:60-08:00"};
    const char *bad[] = {"",
                         "yesterday",
                         "2026-11-20",
                         "2026-11-20 14:03:00Z",
                         "2026-13-01T00:00:00Z",
                         "2025-02-29T00:00:00Z",
                         "2026-11-20T24:00:00Z",
                         "2026-11-20T14:03:00",
                         "2026-11-20T14:03:00Zjunk",
                         "2026-11-20T14:03:00.Z",
                         "2026-11-20T14:03:00+5:30"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        if (!cg_history_date_ok(good[i]))
            fail_msg("'%s' refused", good[i]);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (cg_history_date_ok(bad[i]))
            fail_msg("'%s' taken", bad[i]);
    assert_non_null(cg_history_text_problem("a\xff", 200));
    assert_non_null(cg_history_text_problem("a\tb", 200));
    assert_non_null(cg_history_text_problem("", 200));
    assert_null(cg_history_text_problem("caf\xc3\xa9", 200));
}

/* A history reached through a symlink (a CI cache's path) and through its own path is one
 * history: both lock its target's FILE.lock (the link's own lock did not hold the other out). */
static void test_history__a_symlinked_history_locks_its_target(void **state)
{
    (void)state;
    char dir[] = "/tmp/cg-hlock-XXXXXX", target[64], link[64], lock[80];
    assert_non_null(mkdtemp(dir));
    snprintf(target, sizeof(target), "%s/h.jsonl", dir);
    snprintf(link, sizeof(link), "%s/l.jsonl", dir);
    FILE *f = fopen(target, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(symlink("h.jsonl", link), 0);
    struct cg_err err;
    cg_err_init(&err);
    int fd = cg_history_lock(link, &err);
    assert_true(fd >= 0);
    snprintf(lock, sizeof(lock), "%s.lock", target);
    assert_int_equal(access(lock, F_OK), 0);
    snprintf(lock, sizeof(lock), "%s.lock", link);
    assert_int_not_equal(access(lock, F_OK), 0);
    cg_history_unlock(fd);
    snprintf(lock, sizeof(lock), "%s.lock", target);
    unlink(lock);
    unlink(link);
    unlink(target);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_history__lines_read_back_as_written),
        cmocka_unit_test(test_history__unreadable_lines_are_skipped_with_their_line_number),
        cmocka_unit_test(test_history__a_missing_file_is_an_empty_history),
        cmocka_unit_test(test_history__bounded_by_a_summary_of_the_oldest),
        cmocka_unit_test(test_history__bounded_per_gate),
        cmocka_unit_test(test_history__entry_from_an_artifact),
        cmocka_unit_test(test_history__floor_is_the_runs_floor_as_one_side),
        cmocka_unit_test(test_history__a_recent_accept_is_found_for_a_while),
        cmocka_unit_test(test_history__an_accept_after_the_run_of_its_commit_marks_the_change),
        cmocka_unit_test(test_history__saved_whole_or_not_at_all),
        cmocka_unit_test(test_history__unreadable_lines_are_kept_in_place_when_written),
        cmocka_unit_test(test_history__a_file_that_cannot_be_read_is_refused),
        cmocka_unit_test(test_history__newest_runs_are_read_in_bounded_memory),
        cmocka_unit_test(test_history__newest_runs_of_each_gate_are_read),
        cmocka_unit_test(test_history__gates_are_read_in_bounded_memory),
        cmocka_unit_test(test_history__dates_are_iso_8601),
        cmocka_unit_test(test_history__a_symlinked_history_locks_its_target),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
