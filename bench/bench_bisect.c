/*
 * bench_bisect: bisection's own error rate, a model (no canary is run). Seeded bisections of a
 * 16-commit series where commit 11 is slower by --effect percent, through the search engine
 * (bisect.c) with the measurements of 'canary-gate bisect' modelled: each run of a commit is
 * a process whose steps are its level times (1 + drift z_process) times (1 + noise z_step); a
 * run's value is the mean of its --steps steps; a probe measures pairs against the good end turn
 * about (--runs pairs a look, up to --max-runs), and each look takes the Hodges-Lehmann change of
 * the per-pair log ratios with the signed-rank interval at the look's alpha (paired.h, the plan
 * and levels of sequential.h), as the command does for step_time_mean. Prints how often the
 * named commit is right, wrong or undecided, and the probes and runs per bisection.
 * --first-step C adds a first step of the same size at commit C (< 11): the regression comes in
 * two steps, and a bisection is right when it names both (C and 11).
 *
 *   bench_bisect [--trials N] [--seed S] [--noise PCT] [--drift PCT] [--effect PCT] [--runs N]
 *                [--max-runs N] [--steps N] [--first-step C]
 */
#include "bisect.h"
#include "paired.h"
#include "sequential.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COMMITS 16
#define FIRST_BAD 11

static uint64_t rng = 1;

static double uniform(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return ((double)(rng >> 11) + 0.5) / 9007199254740992.0;
}

static double normal(void)
{
    return sqrt(-2.0 * log(uniform())) * cos(6.283185307179586 * uniform());
}

struct model {
    double noise, drift, effect;
    long steps;
    long first_step; /* 0: one step, at FIRST_BAD */
};

/* One process's run of a commit at level (1 or 1 + effect). */
static double run_value(const struct model *m, double level)
{
    double proc = 1.0 + m->drift / 100.0 * normal(), sum = 0.0;
    for (long s = 0; s < m->steps; s++)
        sum += level * proc * (1.0 + m->noise / 100.0 * normal());
    return sum / (double)m->steps;
}

/* Commit i's level: 1 before the steps, 1 + effect after each. */
static double true_level(const struct model *m, size_t i)
{
    double level = i >= FIRST_BAD ? 1.0 + m->effect / 100.0 : 1.0;
    if (m->first_step > 0 && (long)i >= m->first_step)
        level *= 1.0 + m->effect / 100.0;
    return level;
}

/* A probe of commit i: looks of pairs until its answer is settled; the runs into *runs. */
static void probe(const struct model *m, const struct cg_seq_plan *plan, struct cg_bisect *b,
                  size_t i, bool is_bad, struct cg_bisect_level *lv, enum cg_bisect_answer *a,
                  size_t *runs)
{
    double d[CG_SEQ_MAX_LOOKS * 8];
    double level = true_level(m, i);
    size_t n = 0;
    *a = CG_BISECT_UNRESOLVED;
    for (size_t k = 0; k < plan->n_looks; k++) {
        for (; n < plan->runs_at[k] && n < sizeof(d) / sizeof(d[0]); n++)
            d[n] = log(run_value(m, level) / run_value(m, 1.0));
        double alpha = cg_seq_look_alpha(plan, CG_M_STEP_TIME_MEAN, k, 0.05);
        struct cg_shift s;
        if (cg_paired_hl(d, n, alpha > 0 ? alpha : 1e-9, &s) != 0)
            break;
        *lv = (struct cg_bisect_level){100.0 * expm1(s.estimate), 100.0 * expm1(s.low),
                                       100.0 * expm1(s.high)};
        bool final = k + 1 == plan->n_looks;
        if (is_bad) { /* all its looks, as the command measures it */
            *a = CG_BISECT_LIKE_BAD;
            continue;
        }
        *a = cg_bisect_classify(b, i, lv, final);
        if (*a != CG_BISECT_UNRESOLVED)
            break;
    }
    *runs += 2 * n;
}

static long arg(int argc, char **argv, const char *name, long def)
{
    for (int i = 1; i + 1 < argc; i++) {
        if (strcmp(argv[i], name) == 0) {
            char *end = NULL;
            long v = strtol(argv[i + 1], &end, 10);
            if (end != argv[i + 1] && *end == '\0')
                return v;
            fprintf(stderr, "bench_bisect: %s '%s': expected an integer\n", name, argv[i + 1]);
            exit(2);
        }
    }
    return def;
}

int main(int argc, char **argv)
{
    long trials = arg(argc, argv, "--trials", 100), seed = arg(argc, argv, "--seed", 1);
    struct model m = {(double)arg(argc, argv, "--noise", 3), (double)arg(argc, argv, "--drift", 2),
                      (double)arg(argc, argv, "--effect", 10), arg(argc, argv, "--steps", 30),
                      arg(argc, argv, "--first-step", 0)};
    if (m.first_step < 0 || m.first_step >= FIRST_BAD) {
        fprintf(stderr, "bench_bisect: --first-step %ld: expected 1 to %d\n", m.first_step,
                FIRST_BAD - 1);
        return 2;
    }
    long pairs = arg(argc, argv, "--runs", 6), max_pairs = arg(argc, argv, "--max-runs", 12);
    struct cg_seq_plan plan;
    struct cg_err err;
    if (cg_seq_plan_make_paired(CG_SPEND_POCOCK, (size_t)pairs, (size_t)pairs, (size_t)max_pairs,
                                &plan, &err) != 0) {
        fprintf(stderr, "bench_bisect: %s\n", err.msg);
        return 2;
    }
    rng = (uint64_t)seed * 0x9e3779b97f4a7c15ull + 1;
    long right = 0, wrong = 0, undecided = 0, nothing = 0, held[2] = {0, 0}, named[2] = {0, 0};
    size_t probes_sum = 0, runs_sum = 0, probes_max = 0;
    for (long t = 0; t < trials; t++) {
        struct cg_bisect b;
        struct cg_bisect_level bad;
        enum cg_bisect_answer a;
        size_t runs = 0, probes = 1, i;
        probe(&m, &plan, NULL, COMMITS - 1, true, &bad, &a, &runs);
        if (!cg_bisect_ends_differ(&bad)) {
            nothing++;
            runs_sum += runs;
            probes_sum += probes;
            continue;
        }
        cg_bisect_init(&b, COMMITS, &bad, &err);
        while (cg_bisect_next(&b, &i)) {
            struct cg_bisect_level lv;
            probe(&m, &plan, &b, i, false, &lv, &a, &runs);
            cg_bisect_record(&b, i, a, &lv);
            probes++;
        }
        struct cg_bisect_step steps[CG_BISECT_MAX_STEPS];
        size_t k = cg_bisect_steps(&b, steps);
        bool found = k > 0;
        for (size_t s = 0; s < k; s++)
            found = found && steps[s].found;
        bool ok = m.first_step > 0 ? k == 2 && steps[0].first_high == (size_t)m.first_step &&
                                         steps[1].first_high == FIRST_BAD
                                   : k == 1 && steps[0].first_high == FIRST_BAD;
        if (!found)
            undecided++;
        else if (ok)
            right++;
        else
            wrong++;
        for (size_t s = 0; ok && found && s < k; s++) { /* the step's interval, its true size */
            struct cg_bisect_level size;
            cg_bisect_step_size(&b, &steps[s], &size);
            double truth =
                100.0 * (true_level(&m, steps[s].first_high) - true_level(&m, steps[s].last_low));
            held[s] += size.low <= truth && truth <= size.high;
            named[s]++;
        }
        probes_sum += probes;
        probes_max = probes > probes_max ? probes : probes_max;
        runs_sum += runs;
        cg_bisect_release(&b);
    }
    char first[64] = "";
    if (m.first_step > 0)
        snprintf(first, sizeof(first), " and commit %ld", m.first_step);
    printf("bench_bisect (a model, no canary run): %ld bisections of %d commits, commit %d%s "
           "+%.0f%%, step noise %.0f%%, per-process drift %.0f%%, %ld steps a run, %ld pairs a "
           "look up to %ld, seed %ld\n",
           trials, COMMITS, FIRST_BAD, first, m.effect, m.noise, m.drift, m.steps, pairs,
           max_pairs, seed);
    if (m.first_step > 0)
        printf("  named both steps (commits %ld and %d): %ld   other commits or one step: %ld   "
               "undecided: %ld   nothing found at the ends: %ld\n",
               m.first_step, FIRST_BAD, right, wrong, undecided, nothing);
    else
        printf("  named commit %d: %ld   another commit (or a second step): %ld   undecided: "
               "%ld   nothing found at the ends: %ld\n",
               FIRST_BAD, right, wrong, undecided, nothing);
    printf("  the step's interval holds its true size (cg_bisect_step_size, bisections that "
           "named every step right): %ld of %ld",
           held[0], named[0]);
    if (m.first_step > 0)
        printf(" (first step), %ld of %ld (second)", held[1], named[1]);
    printf("\n");
    printf("  probes per bisection (the bad end included): mean %.2f, at most %zu; canary runs "
           "per bisection (both sides): mean %.1f\n",
           (double)probes_sum / (double)trials, probes_max, (double)runs_sum / (double)trials);
    return 0;
}
