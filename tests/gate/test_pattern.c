/* pattern: a slowdown locked to the step phase, and its size under interference that is not. */
#include "fixtures.h"
#include "pattern.h"
#include "stats.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

/* Runs of 30 measured steps around 10 ms (2% run and step noise), seeded; `busy` adds spells of
 * interference (cg_fixture_contend), `every` > 0 a periodic slowdown of pct at phase `phase`. */
static void runs(struct cg_artifact *a, size_t n, uint64_t seed, bool busy, size_t every,
                 size_t phase, double pct)
{
    struct cg_fixture f = {n, 30, 1e7, 0.02, 0.02, 256, -1, 1 << 20, 0, seed};
    cg_artifact_init(a);
    assert_int_equal(cg_fixture_make(a, &f), 0);
    if (busy)
        cg_fixture_contend(a, seed * 7919 + 1);
    if (every > 0)
        cg_fixture_every(a, every, phase, pct);
}

static void test(size_t nb, size_t nc, uint64_t seed, bool busy_b, bool busy_c, size_t every,
                 size_t phase, double pct, struct cg_pattern *out)
{
    struct cg_artifact b, c;
    runs(&b, nb, 2 * seed + 1, busy_b, 0, 0, 0.0);
    runs(&c, nc, 2 * seed + 2, busy_c, every, phase, pct);
    assert_int_equal(cg_pattern_test(&b, &c, out), 0);
    cg_artifact_release(&b);
    cg_artifact_release(&c);
}

/* Every fourth step 20% slower (the mean +5%, the fastest steps unchanged), both sides busy:
 * found at its period and phase, its size measured, in every current run. */
static void test_pattern__finds_every_fourth_step_through_interference(void **state)
{
    (void)state;
    struct cg_pattern p;
    test(15, 15, 1, true, true, 4, 1, 20.0, &p);
    assert_true(p.tested);
    if (!(p.p_value <= 0.005))
        fail_msg("p = %g at step %d of every %d", p.p_value, p.phase + 1, p.period);
    assert_int_equal(p.period, 4);
    assert_int_equal(p.phase, 1);
    if (!(p.excess_pct > 15.0 && p.excess_pct < 25.0))
        fail_msg("excess %.1f%%, made 20%%", p.excess_pct);
    assert_int_equal(p.runs_slower, 15);
    assert_int_equal(p.runs, 15);
    assert_true(fabs(cg_pattern_mean_pct(&p) - p.excess_pct / 4.0) < 1e-9);
}

/* Other periods, a long one included, and 75 baseline runs against 15. */
static void test_pattern__finds_other_periods(void **state)
{
    (void)state;
    static const struct {
        size_t nb, every, phase;
        double pct;
    } cases[] = {{15, 2, 0, 30.0}, {75, 3, 2, 25.0}, {15, 10, 7, 40.0}, {75, 5, 0, 20.0}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct cg_pattern p;
        test(cases[i].nb, 15, 10 + i, true, true, cases[i].every, cases[i].phase, cases[i].pct, &p);
        if (!(p.tested && p.p_value <= 0.01 && p.period == (int)cases[i].every &&
              p.phase == (int)cases[i].phase))
            fail_msg("case %zu: p = %g at step %d of every %d", i, p.p_value, p.phase + 1,
                     p.period);
    }
}

/* Under no change, the size of the test at 0.05 with interference on both sides (exchangeable
 * runs): the search over periods and phases is paid for by the splits. And with interference
 * on the current side only (not exchangeable, the case the floor rule guards), it stays low:
 * spells are not locked to the step phase. 200 comparisons each; the binomial standard error
 * at 5% is 1.5 points. */
static void test_pattern__size_under_interference(void **state)
{
    (void)state;
    size_t n = 200, both = 0, current_only = 0;
    for (uint64_t s = 0; s < n; s++) {
        struct cg_pattern p;
        test(15, 15, 100 + s, true, true, 0, 0, 0.0, &p);
        both += p.p_value <= 0.05;
        test(15, 15, 1000 + s, false, true, 0, 0, 0.0, &p);
        current_only += p.p_value <= 0.05;
    }
    print_message("pattern size at 0.05: %.1f%% (both sides busy), %.1f%% (current busy)\n",
                  100.0 * (double)both / (double)n, 100.0 * (double)current_only / (double)n);
    assert_true(both <= 16);         /* 8%: 2 standard errors above 5% */
    assert_true(current_only <= 16);
}

/* Too few runs or steps: not tested, and says so. Three runs a side take every split (20). */
static void test_pattern__needs_runs_and_steps(void **state)
{
    (void)state;
    struct cg_pattern p;
    test(2, 15, 3, false, false, 4, 0, 50.0, &p);
    assert_false(p.tested);
    assert_true(isnan(p.p_value));
    struct cg_artifact b, c;
    struct cg_fixture f = {5, 5, 1e7, 0.02, 0.02, 256, -1, 1 << 20, 0, 5};
    cg_artifact_init(&b);
    cg_artifact_init(&c);
    assert_int_equal(cg_fixture_make(&b, &f), 0);
    f.seed = 6;
    assert_int_equal(cg_fixture_make(&c, &f), 0);
    assert_int_equal(cg_pattern_test(&b, &c, &p), 0); /* 5 steps: no period has 3 per phase */
    assert_false(p.tested);
    cg_artifact_release(&b);
    cg_artifact_release(&c);
    test(3, 3, 4, false, false, 2, 1, 50.0, &p);
    assert_true(p.tested);
    double k = p.p_value * 20.0; /* every split: a multiple of 1/20, at least 1/20 */
    assert_true(fabs(k - round(k)) < 1e-9 && k >= 1.0);
    assert_int_equal(p.period, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pattern__finds_every_fourth_step_through_interference),
        cmocka_unit_test(test_pattern__finds_other_periods),
        cmocka_unit_test(test_pattern__size_under_interference),
        cmocka_unit_test(test_pattern__needs_runs_and_steps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
