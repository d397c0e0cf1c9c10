/*
 * test_report_ranks: the reports' per-rank table (report_ranks.h): each rank's step, exposed
 * communication and compute per step on both sides, node names escaped, long worlds cut and
 * counted, nothing for canaries of one process.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fixtures.h"
#include "report_ranks.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A run of n ranks, two per node ("n1", "n2", ...; rank 1's node named hostile), 10 steps of
 * step_ms, comm_ms of exposed communication and 6 ms of compute a step each. */
static void add_run(struct cg_artifact *a, size_t n, double step_ms, double comm_ms,
                    const char *hostile)
{
    struct cg_run *run = cg_artifact_add_run(a);
    assert_non_null(run);
    run->n_ranks = n;
    run->ranks = calloc(n, sizeof(*run->ranks));
    for (size_t r = 0; r < n; r++) {
        struct cg_rank *k = &run->ranks[r];
        char node[32];
        snprintf(node, sizeof(node), "n%zu", r / 2 + 1);
        k->rank = (int64_t)r;
        k->local_rank = (int64_t)(r % 2);
        k->node = strdup(r == 1 && hostile != NULL ? hostile : node);
        k->n_steps = 10;
        k->step_ns = malloc(10 * sizeof(int64_t));
        for (size_t s = 0; s < 10; s++)
            k->step_ns[s] = (int64_t)(step_ms * 1e6);
        k->busy_ns = (int64_t)((comm_ms + 6.0) * 1e7);
        k->compute_ns = (int64_t)(6.0 * 1e7);
        k->comm_exposed_ns = (int64_t)(comm_ms * 1e7);
        k->peak_device_bytes = -1;
    }
    for (size_t s = 0; s < 10; s++)
        assert_int_equal(cg_run_add_step(run, (int64_t)(step_ms * 1e6), 1024, -1), 0);
    cg_run_summarize(run);
}

static void test_report_ranks__communication_told_apart_from_compute(void **state)
{
    (void)state;
    struct cg_artifact b, c;
    cg_artifact_init(&b);
    cg_artifact_init(&c);
    for (int i = 0; i < 3; i++) {
        add_run(&b, 4, 10.0, 1.0, "n1|<b>x</b>");
        add_run(&c, 4, 12.0, 3.0, "n1|<b>x</b>");
    }
    struct cg_buf md, term;
    cg_buf_init(&md, 1 << 20);
    cg_buf_init(&term, 1 << 20);
    assert_int_equal(cg_report_ranks_markdown(&b, &c, &md), 0);
    assert_int_equal(cg_report_ranks_term(&b, &c, &term), 0);
    const char *m = cg_buf_str(&md), *t = cg_buf_str(&term);
    if (strstr(m, "### Ranks") == NULL ||
        strstr(m, "| 3 | n2 | 10.00 ms &rarr; 12.00 ms (+20.0%) | 1.00 ms &rarr; 3.00 ms "
                  "(+200.0%) | 6.00 ms &rarr; 6.00 ms (+0.0%) |") == NULL)
        fail_msg("markdown:\n%s", m);
    /* a node name from the artifact is escaped: no raw pipe or tag */
    assert_null(strstr(m, "n1|<b>"));
    if (strstr(t, "rank 3 on n2: 10.00 ms -> 12.00 ms (+20.0%); 1.00 ms -> 3.00 ms (+200.0%); "
                  "6.00 ms -> 6.00 ms (+0.0%)") == NULL)
        fail_msg("terminal:\n%s", t);
    cg_buf_release(&md);
    cg_buf_release(&term);
    cg_artifact_release(&b);
    cg_artifact_release(&c);
}

static void test_report_ranks__long_worlds_cut_one_process_nothing(void **state)
{
    (void)state;
    struct cg_artifact b, c, one;
    cg_artifact_init(&b);
    cg_artifact_init(&c);
    cg_artifact_init(&one);
    add_run(&b, 20, 10.0, 1.0, NULL);
    add_run(&c, 24, 10.0, 1.0, NULL); /* ranks 20-23 new: no baseline figure */
    struct cg_rank_row *rows;
    size_t n;
    assert_int_equal(cg_report_rank_rows(&b, &c, &rows, &n), 0);
    assert_int_equal(n, 24);
    assert_int_equal(rows[23].rank, 23);
    assert_true(isnan(rows[23].step_ns[0]));
    assert_float_equal(rows[23].step_ns[1], 10e6, 1.0);
    free(rows);
    struct cg_buf md;
    cg_buf_init(&md, 1 << 20);
    assert_int_equal(cg_report_ranks_markdown(&b, &c, &md), 0);
    assert_non_null(strstr(cg_buf_str(&md), "8 more ranks in the artifacts"));
    cg_buf_release(&md);
    struct cg_fixture f = {3, 20, 10e6, 0.0, 0.0, 1024, -1, 200 << 20, 0, 1};
    assert_int_equal(cg_fixture_make(&one, &f), 0);
    cg_buf_init(&md, 1 << 20);
    assert_int_equal(cg_report_ranks_markdown(&one, &one, &md), 0);
    assert_int_equal(md.len, 0);
    cg_buf_release(&md);
    cg_artifact_release(&b);
    cg_artifact_release(&c);
    cg_artifact_release(&one);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_report_ranks__communication_told_apart_from_compute),
        cmocka_unit_test(test_report_ranks__long_worlds_cut_one_process_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
