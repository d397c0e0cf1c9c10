/*
 * test_bisect: the search engine on its own, driven by scripted levels per commit: where it
 * probes, what a measurement answers, the first bad commit of one step and of two, skipped and
 * unresolved commits, and the ends that differ or not. Table-driven.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "bisect.h"

#include <math.h>
#include <string.h>

#define N 16

/* A commit's scripted level: change, half-width of its interval; skip: it does not build. */
struct script {
    const char *name;
    double change[N];
    double half[N];
    bool skip[N];
    size_t max_probes;
    size_t first_bad[2]; /* expected steps (0: none) */
    size_t n_steps;
    bool all_found;
};

/* Runs the search to its end on a script; returns the probes made. */
static size_t run_script(const struct script *sc, struct cg_bisect *b)
{
    struct cg_bisect_level bad = {sc->change[N - 1], sc->change[N - 1] - sc->half[N - 1],
                                  sc->change[N - 1] + sc->half[N - 1]};
    struct cg_err err;
    assert_int_equal(cg_bisect_init(b, N, &bad, &err), 0);
    size_t i, probes = 0;
    while (cg_bisect_next(b, &i) && probes < 40) {
        probes++;
        if (sc->skip[i]) {
            cg_bisect_record(b, i, CG_BISECT_SKIPPED, NULL);
            continue;
        }
        struct cg_bisect_level lv = {sc->change[i], sc->change[i] - sc->half[i],
                                     sc->change[i] + sc->half[i]};
        cg_bisect_record(b, i, cg_bisect_classify(b, i, &lv, true), &lv);
    }
    return probes;
}

static void fill(double *v, size_t from, size_t to, double x)
{
    for (size_t i = from; i < to; i++)
        v[i] = x;
}

static void test_bisect__scripted_searches(void **state)
{
    (void)state;
    static struct script cases[6];
    memset(cases, 0, sizeof(cases));
    /* one step of +10% at commit 11, intervals of +-2 */
    cases[0].name = "one step at 11";
    fill(cases[0].change, 11, N, 10);
    fill(cases[0].half, 0, N, 2);
    cases[0].max_probes = 4;
    cases[0].first_bad[0] = 11;
    cases[0].n_steps = 1;
    cases[0].all_found = true;
    /* the same, exact (a count: +1 per step) */
    cases[1] = cases[0];
    cases[1].name = "one exact step at 11";
    fill(cases[1].change, 11, N, 1);
    fill(cases[1].half, 0, N, 0);
    /* commit 7 (the first probe) does not build: its neighbour is probed */
    cases[2] = cases[0];
    cases[2].name = "the first probe skipped";
    cases[2].skip[7] = true;
    cases[2].max_probes = 5;
    /* two steps of +6% at 5 and 12 */
    cases[3].name = "two steps";
    fill(cases[3].change, 5, 12, 6);
    fill(cases[3].change, 12, N, 12);
    fill(cases[3].half, 0, N, 1.5);
    cases[3].max_probes = 9;
    cases[3].first_bad[0] = 5;
    cases[3].first_bad[1] = 12;
    cases[3].n_steps = 2;
    cases[3].all_found = true;
    /* commits 10 and 11 skipped: the step is among 10, 11 (and 12 like bad) */
    cases[4] = cases[0];
    cases[4].name = "skipped around the step";
    cases[4].skip[10] = cases[4].skip[11] = true;
    cases[4].max_probes = 6;
    cases[4].first_bad[0] = 12;
    cases[4].all_found = false;
    /* wide intervals at 7..9: unresolved, the search goes around them */
    cases[5] = cases[0];
    cases[5].name = "unresolved commits";
    fill(cases[5].half, 6, 10, 12);
    cases[5].max_probes = 8;
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        struct cg_bisect b;
        size_t probes = run_script(&cases[k], &b);
        struct cg_bisect_step steps[CG_BISECT_MAX_STEPS];
        size_t n = cg_bisect_steps(&b, steps);
        if (probes > cases[k].max_probes)
            fail_msg("%s: %zu probes, at most %zu expected", cases[k].name, probes,
                     cases[k].max_probes);
        if (n != cases[k].n_steps && cases[k].all_found)
            fail_msg("%s: %zu steps, %zu expected", cases[k].name, n, cases[k].n_steps);
        for (size_t s = 0; s < n && cases[k].all_found; s++) {
            if (!steps[s].found || steps[s].first_high != cases[k].first_bad[s])
                fail_msg("%s: step %zu at %zu (found %d), expected %zu", cases[k].name, s,
                         steps[s].first_high, steps[s].found, cases[k].first_bad[s]);
        }
        if (!cases[k].all_found) {
            assert_int_equal(n, 1);
            assert_false(steps[0].found);
            assert_false(steps[0].open);
            assert_int_equal(steps[0].first_high, cases[k].first_bad[0]);
            assert_int_equal(steps[0].last_low, 9);
        }
        cg_bisect_release(&b);
    }
}

/* A probe of commit 7 at level lv, on its last look (final) or not, and the answer wanted. */
struct answer_row {
    struct cg_bisect_level lv;
    bool final;
    enum cg_bisect_answer want;
};

/* Classifies each row against the ends (good, and bad at its level), failing on a wrong one. */
static void check_answers(const struct cg_bisect_level *bad, const struct answer_row *rows,
                          size_t n)
{
    struct cg_bisect b;
    struct cg_err err;
    assert_int_equal(cg_bisect_init(&b, N, bad, &err), 0);
    for (size_t k = 0; k < n; k++) {
        enum cg_bisect_answer a = cg_bisect_classify(&b, 7, &rows[k].lv, rows[k].final);
        if (a != rows[k].want)
            fail_msg("row %zu: %s, expected %s", k, cg_bisect_answer_text(a),
                     cg_bisect_answer_text(rows[k].want));
    }
    cg_bisect_release(&b);
}

static void test_bisect__answers_against_the_segment(void **state)
{
    (void)state;
    struct cg_bisect_level bad = {12, 10, 14};
    static const struct answer_row rows[] = {
        {{0, -2, 2}, true, CG_BISECT_LIKE_GOOD},
        {{12, 10, 14}, true, CG_BISECT_LIKE_BAD},
        {{7, 0.5, 13}, true, CG_BISECT_LIKE_BAD},    /* half of bad's and significant */
        {{7, -0.5, 13}, true, CG_BISECT_UNRESOLVED}, /* not significant */
        {{5, -1, 12.5}, true, CG_BISECT_UNRESOLVED}, /* below half, not clearly below bad */
        {{6, 4, 8}, true, CG_BISECT_BETWEEN},        /* apart from both: a step of its own */
        {{6, 4, 8}, false, CG_BISECT_UNRESOLVED},    /* ... only on its last look */
        {{1.5, 0.5, 2.5}, true, CG_BISECT_LIKE_GOOD}, /* apart, but too small a step */
    };
    check_answers(&bad, rows, sizeof(rows) / sizeof(rows[0]));
}

/* A bad end decided on its first look has a wide interval (+20%, +7.9% to +24.4%: the CLI
 * test's two steps of +10%); a probe at the first step's level, clearly above the good end by a
 * step, was "like good" (its interval reaches into the bad end's) and the first step was missed.
 * It is a step of its own on its last look, never "like good". */
static void test_bisect__a_probe_apart_from_good_is_not_like_good(void **state)
{
    (void)state;
    struct cg_bisect_level bad = {20, 7.9, 24.4};
    static const struct answer_row rows[] = {
        {{8.4, 6.5, 9.9}, true, CG_BISECT_BETWEEN},
        {{8.4, 6.5, 9.9}, false, CG_BISECT_UNRESOLVED},
        {{1.0, -1.0, 3.0}, true, CG_BISECT_LIKE_GOOD}, /* not apart from good */
        {{4.0, 3.0, 5.0}, true, CG_BISECT_LIKE_GOOD},  /* apart, but less than a step (5) */
        {{19.0, 15.0, 23.0}, true, CG_BISECT_LIKE_BAD},
        {{13.0, 11.0, 15.0}, true, CG_BISECT_LIKE_BAD}, /* not apart from bad's wide interval */
    };
    check_answers(&bad, rows, sizeof(rows) / sizeof(rows[0]));
}

/* Whether a probe is apart from an end is asked of the difference of the two, not of two
 * intervals apart: the probe below (+10%, +8% to +12.5%) is 10 points under a bad end of +20%
 * (+12% to +26%), beyond the difference's half-width (the root of 2.5 squared and 8 squared,
 * 8.4), though its interval reaches into the bad end's. It was "like bad" and the first of two
 * steps was missed (test_cmd_bisect's two steps on a loaded machine). */
static void test_bisect__apart_is_a_significant_difference_not_intervals_apart(void **state)
{
    (void)state;
    struct cg_bisect_level bad = {20, 12, 26};
    static const struct answer_row rows[] = {
        {{10, 8, 12.5}, true, CG_BISECT_BETWEEN},
        {{10, 8, 12.5}, false, CG_BISECT_UNRESOLVED},
        {{13, 10.5, 15.5}, true, CG_BISECT_LIKE_BAD}, /* 7 under bad: within 8.4 */
        {{7, 5, 9}, true, CG_BISECT_BETWEEN},
        {{3, 1, 5}, true, CG_BISECT_LIKE_GOOD},  /* 3 over good: less than a step (5) */
        {{6, 0, 12}, true, CG_BISECT_LIKE_GOOD}, /* 6 over good: within its own 6 */
    };
    check_answers(&bad, rows, sizeof(rows) / sizeof(rows[0]));
}

static void test_bisect__ends_that_do_not_differ_have_nothing_to_find(void **state)
{
    (void)state;
    struct cg_bisect_level same = {0.4, -1.2, 2.0}, worse = {3.0, 0.2, 5.8}, exact = {1, 1, 1};
    assert_false(cg_bisect_ends_differ(&same));
    assert_true(cg_bisect_ends_differ(&worse));
    assert_true(cg_bisect_ends_differ(&exact));
    struct cg_bisect b;
    struct cg_err err;
    assert_int_equal(cg_bisect_init(&b, 1, &worse, &err), CG_EINPUT);
}

/* A step's size: its first bad commit's change less the commit before it, the interval's ends
 * from the half-widths on each side (root of the sum of squares); against the good end (exact 0)
 * it is the first bad commit's own change and interval; exact counts have no width. */
static void test_bisect__a_step_has_its_own_size_and_interval(void **state)
{
    (void)state;
    struct script sc;
    memset(&sc, 0, sizeof(sc));
    fill(sc.change, 5, 12, 6);
    fill(sc.change, 12, N, 13);
    fill(sc.half, 1, N, 1.5);
    sc.half[11] = 2; /* the commit before the second step: wider */
    struct cg_bisect b;
    run_script(&sc, &b);
    struct cg_bisect_step steps[CG_BISECT_MAX_STEPS];
    assert_int_equal(cg_bisect_steps(&b, steps), 2);
    assert_int_equal(steps[1].first_high, 12);
    assert_int_equal(steps[1].last_low, 11);
    struct cg_bisect_level size;
    cg_bisect_step_size(&b, &steps[1], &size);
    assert_float_equal(size.change, 7.0, 1e-12);
    assert_float_equal(size.low, 7.0 - 2.5, 1e-12); /* hypot(1.5, 2) */
    assert_float_equal(size.high, 7.0 + 2.5, 1e-12);
    cg_bisect_step_size(&b, &steps[0], &size);
    assert_int_equal(steps[0].last_low, 4);
    assert_float_equal(size.change, 6.0, 1e-12);
    assert_float_equal(size.low, 6.0 - hypot(1.5, 1.5), 1e-12);
    cg_bisect_release(&b);
    /* one exact step of +1 at 11 */
    fill(sc.change, 0, N, 0);
    fill(sc.change, 11, N, 1);
    fill(sc.half, 0, N, 0);
    run_script(&sc, &b);
    assert_int_equal(cg_bisect_steps(&b, steps), 1);
    cg_bisect_step_size(&b, &steps[0], &size);
    assert_true(size.change == 1.0 && size.low == 1.0 && size.high == 1.0);
    cg_bisect_release(&b);
    /* asymmetric intervals: the low end from the first bad commit's lower half-width and the
     * commit before it's upper one, the high end from the other two */
    struct cg_bisect_level bad = {12, 9, 13}, before = {1, -2, 2.5}, first = {11, 10, 15};
    struct cg_err err;
    assert_int_equal(cg_bisect_init(&b, N, &bad, &err), 0);
    cg_bisect_record(&b, 7, CG_BISECT_LIKE_GOOD, &before);
    cg_bisect_record(&b, 8, CG_BISECT_LIKE_BAD, &first);
    assert_int_equal(cg_bisect_steps(&b, steps), 1);
    assert_true(steps[0].found && steps[0].first_high == 8);
    cg_bisect_step_size(&b, &steps[0], &size);
    assert_float_equal(size.change, 10.0, 1e-12);
    assert_float_equal(size.low, 10.0 - hypot(1.0, 1.5), 1e-12);
    assert_float_equal(size.high, 10.0 + hypot(4.0, 3.0), 1e-12);
    cg_bisect_release(&b);
}

static void test_bisect__the_first_probe_is_the_middle_then_its_neighbour(void **state)
{
    (void)state;
    struct cg_bisect b;
    struct cg_err err;
    struct cg_bisect_level bad = {10, 8, 12};
    size_t i;
    assert_int_equal(cg_bisect_init(&b, N, &bad, &err), 0);
    assert_true(cg_bisect_next(&b, &i));
    assert_int_equal(i, 7);
    cg_bisect_record(&b, 7, CG_BISECT_SKIPPED, NULL);
    assert_true(cg_bisect_next(&b, &i));
    assert_int_equal(i, 6); /* the nearer of the neighbours, the earlier of two */
    cg_bisect_release(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bisect__scripted_searches),
        cmocka_unit_test(test_bisect__answers_against_the_segment),
        cmocka_unit_test(test_bisect__a_probe_apart_from_good_is_not_like_good),
        cmocka_unit_test(test_bisect__apart_is_a_significant_difference_not_intervals_apart),
        cmocka_unit_test(test_bisect__ends_that_do_not_differ_have_nothing_to_find),
        cmocka_unit_test(test_bisect__a_step_has_its_own_size_and_interval),
        cmocka_unit_test(test_bisect__the_first_probe_is_the_middle_then_its_neighbour),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
