/*
 * bench_history: what change-point detection (src/gate/changepoint.h) finds in main's history,
 * on histories simulated from recorded canary runs with changes put in at known commits.
 * Figures go to bench/RESULTS.md ("Change points in main's history").
 *
 * A history has one value per commit, as 'canary-gate history append' records it (docs/history.md):
 * the median of K runs' own values of step_time_mean or step_time_p95 (--metric,
 * cg_verdict_run_value), and for step_time_floor the floor of the K runs as one side, as the
 * gate compares it (the median of the fast runs' floors, floor.h; side_floor is another name for
 * it); or one it does not record: step_time_median, the runs' median step time, or
 * floor_runs_median, the median of all K runs' floors (what the history recorded for the floor
 * before it took the fast runs' median). K is a recording's runs, 15 with the
 * default thresholds
 * (--runs-per-commit). The runs are taken from a pool recorded by bench/detect --save (the
 * unchanged canary, pool "aa", by default), so the noise is the runner's own: its spread, its
 * skew, its spells. How a commit's runs
 * are taken (--draw): "block" (the default), K consecutive runs from a random place, so the runs
 * of one recording share the runner's state as runs measured one after another do, while
 * commits, recorded at other times, are independent; "random", K runs drawn with replacement;
 * "ordered", commit after commit K consecutive runs each from one random start, so neighbouring
 * commits share the runner's drift too (it needs commits x K runs in the pool, so its histories
 * overlap). A change multiplies every value from its commit on.
 *
 * Histories: no change; one step of +2%, +5% or +10% at a random commit in the middle half;
 * and drift, ten steps of +0.8% 20 commits apart (centred). A step counts as found when a change
 * point lies within --window commits of it (10); its delay is the nearest point's index minus
 * the step's. Other points are false ones. Drift is judged by what the history command would
 * show: the product of the points' shifts (the last segment's median over the first's) against
 * the true +8.3%. Then the time of one check of --check-commits (1,000) commits, block draws,
 * with 0, 3 and 15 steps of alternately +10% and -5%.
 *
 * Usage: bench_history --load DIR [--pool NAME] [--reps N] [--commits N] [--runs-per-commit K]
 *        [--window W] [--seed S] [--draw block|random|ordered] [--metric NAME]
 */
#include "bench.h"
#include "detect_pool.h"

#include "changepoint.h"
#include "floor.h"
#include "metric.h"
#include "stats.h"
#include "verdict.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_POINTS 64
#define DRIFT_STEPS 10
#define DRIFT_GAP 20
#define DRIFT_PCT 0.8
#define TIMING_REPEATS 20
/* --metric step_time_median: the runs' median step time; step_time_floor (or side_floor): the
 * floor of a commit's runs as one side; floor_runs_median: the median of the runs' floors. */
#define METRIC_MEDIAN (-1)
#define METRIC_SIDE_FLOOR (-2)
#define METRIC_RUNS_FLOOR (-3)

struct opts {
    const char *load, *pool;
    size_t reps, commits, k, window, check_commits;
    uint64_t seed;
    enum draw { DRAW_BLOCK, DRAW_RANDOM, DRAW_ORDERED } draw;
    int metric; /* step_time_mean or _p95 (enum cg_metric), or a METRIC_ above */
};

/* The pool's per-run values and a history's scratch. */
struct sim {
    const struct opts *o;
    double *runs;
    size_t n_runs;
    double *draw; /* k values */
    uint64_t rng;
};

/* What the histories of one kind gave. */
struct tally {
    size_t histories, found, covered, other_points, with_points, commits;
    double *delay;  /* of found steps */
    double *shift;  /* reported shift of found steps; drift: reported total */
    double *widest; /* drift: the largest single shift of a history */
    size_t n_delay, n_shift;
};

static size_t rand_below(uint64_t *st, size_t n)
{
    return (size_t)(cg_stats_rand(st) % (uint64_t)n);
}

/* One value per commit into h: the median of k runs' values (of the fast runs' for the side
 * floor). */
static void make_history(struct sim *s, double *h, size_t commits, enum draw how)
{
    size_t k = s->o->k, n = s->n_runs;
    size_t start = how == DRAW_ORDERED ? rand_below(&s->rng, n - commits * k + 1) : 0;
    for (size_t c = 0; c < commits; c++) {
        if (how == DRAW_BLOCK)
            start = rand_below(&s->rng, n);
        for (size_t j = 0; j < k; j++) {
            size_t r = how == DRAW_RANDOM  ? rand_below(&s->rng, n)
                       : how == DRAW_BLOCK ? (start + j) % n
                                           : start + c * k + j;
            s->draw[j] = s->runs[r];
        }
        size_t keep = s->o->metric == METRIC_SIDE_FLOOR ? cg_floor_fast_runs(s->draw, k) : k;
        qsort(s->draw, keep, sizeof(*s->draw), cg_stats_cmp_double);
        h[c] = cg_stats_sorted_median(s->draw, keep);
    }
}

static void add_step(double *h, size_t commits, size_t at, double pct)
{
    for (size_t c = at; c < commits; c++)
        h[c] *= 1.0 + pct / 100.0;
}

static int tally_init(struct tally *t, size_t reps)
{
    memset(t, 0, sizeof(*t));
    t->delay = calloc(reps, sizeof(*t->delay));
    t->shift = calloc(reps, sizeof(*t->shift));
    t->widest = calloc(reps, sizeof(*t->widest));
    return t->delay && t->shift && t->widest ? 0 : -1;
}

static void tally_release(struct tally *t)
{
    free(t->delay);
    free(t->shift);
    free(t->widest);
}

static int detect(const double *h, size_t n, struct cg_changepoint *cp, size_t *got)
{
    int rc = cg_cp_detect(h, n, NULL, cp, MAX_POINTS, got);
    if (rc != 0)
        fprintf(stderr, "bench_history: change-point detection failed (%d)\n", rc);
    return rc;
}

/* Histories with one step of pct (0: none). */
static int run_steps(struct sim *s, double pct, double *h, struct tally *t)
{
    struct cg_changepoint cp[MAX_POINTS];
    size_t n = s->o->commits;
    for (size_t r = 0; r < s->o->reps; r++) {
        size_t at = n / 4 + rand_below(&s->rng, n / 2), got;
        make_history(s, h, n, s->o->draw);
        if (pct != 0)
            add_step(h, n, at, pct);
        if (detect(h, n, cp, &got) != 0)
            return -1;
        t->histories++;
        t->commits += n;
        t->with_points += got > 0;
        size_t near = got;
        for (size_t i = 0; pct != 0 && i < got; i++) {
            size_t d = cp[i].index > at ? cp[i].index - at : at - cp[i].index;
            if (d <= s->o->window &&
                (near == got || d < (size_t)labs((long)cp[near].index - (long)at)))
                near = i;
        }
        t->other_points += got - (near < got);
        if (near == got)
            continue;
        t->found++;
        t->delay[t->n_delay++] = (double)cp[near].index - (double)at;
        t->shift[t->n_shift++] = cp[near].shift_pct;
        t->covered += cp[near].ci_low_pct <= pct && pct <= cp[near].ci_high_pct;
    }
    return 0;
}

/* Histories with DRIFT_STEPS steps of DRIFT_PCT, DRIFT_GAP commits apart, centred. */
static int run_drift(struct sim *s, double *h, struct tally *t)
{
    struct cg_changepoint cp[MAX_POINTS];
    size_t n = s->o->commits, span = (DRIFT_STEPS - 1) * DRIFT_GAP;
    size_t first = n > span ? (n - span) / 2 : 0;
    for (size_t r = 0; r < s->o->reps; r++) {
        size_t got;
        make_history(s, h, n, s->o->draw);
        for (size_t k = 0; k < DRIFT_STEPS; k++)
            add_step(h, n, first + k * DRIFT_GAP, DRIFT_PCT);
        if (detect(h, n, cp, &got) != 0)
            return -1;
        t->histories++;
        t->commits += n;
        t->with_points += got > 0;
        t->other_points += got;
        double total = 1.0, widest = 0.0;
        for (size_t i = 0; i < got; i++) {
            total *= 1.0 + cp[i].shift_pct / 100.0;
            widest = fmax(widest, cp[i].shift_pct);
        }
        t->shift[t->n_shift++] = (total - 1.0) * 100.0;
        t->widest[r] = widest;
    }
    return 0;
}

/* 95% Wilson score interval of k in n, in percent. */
static void wilson(size_t k, size_t n, double *lo, double *hi)
{
    double z = 1.959963984540054, p = (double)k / (double)n, nn = (double)n;
    double c = (p + z * z / (2 * nn)) / (1 + z * z / nn);
    double w = z * sqrt(p * (1 - p) / nn + z * z / (4 * nn * nn)) / (1 + z * z / nn);
    *lo = fmax(0.0, c - w) * 100.0;
    *hi = fmin(1.0, c + w) * 100.0;
}

static double quantile(const double *v, size_t n, double q)
{
    return n ? cg_stats_quantile(v, n, q) : NAN;
}

static void print_step_row(const char *name, double pct, const struct tally *t)
{
    double lo, hi;
    wilson(t->found, t->histories, &lo, &hi);
    printf("| %s | %zu |", name, t->histories);
    if (pct == 0) {
        printf(" &mdash; | &mdash; | &mdash; | &mdash; |");
    } else {
        printf(" %zu (**%.1f%%**, %.1f to %.1f) |", t->found,
               100.0 * (double)t->found / (double)t->histories, lo, hi);
        if (t->found == 0)
            printf(" &mdash; | &mdash; | &mdash; |");
        else
            printf(" %+.1f / %+.1f / %+.1f | %+.2f%% | %zu of %zu |",
                   quantile(t->delay, t->n_delay, 0.1), quantile(t->delay, t->n_delay, 0.5),
                   quantile(t->delay, t->n_delay, 0.9), quantile(t->shift, t->n_shift, 0.5),
                   t->covered, t->found);
    }
    printf(" %.2f |\n", 1000.0 * (double)t->other_points / (double)t->commits);
}

static void print_drift_row(const struct tally *t)
{
    double lo, hi, truth = (pow(1.0 + DRIFT_PCT / 100.0, DRIFT_STEPS) - 1.0) * 100.0;
    size_t half = 0;
    for (size_t i = 0; i < t->n_shift; i++)
        half += t->shift[i] >= truth / 2.0;
    wilson(t->with_points, t->histories, &lo, &hi);
    printf("| %d x %+.1f%%, %d commits apart (%+.1f%% in all) | %zu | %zu (**%.1f%%**, %.1f to "
           "%.1f) | %.1f | %+.2f%% (%+.2f%% to %+.2f%%) | %.1f%% | %+.2f%% |\n",
           DRIFT_STEPS, DRIFT_PCT, DRIFT_GAP, truth, t->histories, t->with_points,
           100.0 * (double)t->with_points / (double)t->histories, lo, hi,
           (double)t->other_points / (double)t->histories, quantile(t->shift, t->n_shift, 0.5),
           quantile(t->shift, t->n_shift, 0.1), quantile(t->shift, t->n_shift, 0.9),
           100.0 * (double)half / (double)t->histories, quantile(t->widest, t->histories, 0.5));
}

/* Median and largest seconds of TIMING_REPEATS checks of n commits with `steps` changes. */
static int time_checks(struct sim *s, size_t n, int steps, double *median_s, double *max_s,
                       size_t *points)
{
    double *h = malloc(n * sizeof(*h)), secs[TIMING_REPEATS];
    struct cg_changepoint cp[MAX_POINTS];
    if (h == NULL)
        return -1;
    make_history(s, h, n, DRAW_BLOCK); /* "ordered" would need n x K runs */
    for (int k = 0; k < steps; k++)
        add_step(h, n, n * (size_t)(k + 1) / (size_t)(steps + 1), k % 2 ? -5.0 : 10.0);
    for (size_t r = 0; r < TIMING_REPEATS; r++) {
        double t0 = cg_bench_now_s();
        if (detect(h, n, cp, points) != 0) {
            free(h);
            return -1;
        }
        secs[r] = cg_bench_now_s() - t0;
    }
    *median_s = cg_bench_median(secs, TIMING_REPEATS);
    *max_s = secs[0];
    for (size_t r = 1; r < TIMING_REPEATS; r++)
        *max_s = fmax(*max_s, secs[r]);
    free(h);
    return 0;
}

static int parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*s == '\0' || *end != '\0' || errno != 0 || *s == '-')
        return -1;
    *out = (size_t)v;
    return 0;
}

/* A step-time metric's name: a gated one, step_time_median, side_floor or floor_runs_median. */
static int parse_metric(const char *name, int *out)
{
    static const struct {
        const char *name;
        int metric;
    } other[] = {{"step_time_median", METRIC_MEDIAN},
                 {"step_time_floor", METRIC_SIDE_FLOOR},
                 {"side_floor", METRIC_SIDE_FLOOR},
                 {"floor_runs_median", METRIC_RUNS_FLOOR}};
    for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
        if (strcmp(name, other[i].name) == 0) {
            *out = other[i].metric;
            return 0;
        }
    }
    for (int m = CG_M_STEP_TIME_MEAN; m < CG_M_STEP_TIME_FLOOR; m++) {
        if (strcmp(name, cg_metric_name((enum cg_metric)m)) == 0) {
            *out = m;
            return 0;
        }
    }
    return -1;
}

static const char *metric_name(int m)
{
    return m == METRIC_MEDIAN       ? "step_time_median"
           : m == METRIC_SIDE_FLOOR ? "step_time_floor (the runs' floor as one side)"
           : m == METRIC_RUNS_FLOOR ? "floor_runs_median"
                                    : cg_metric_name((enum cg_metric)m);
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){.pool = "aa",
                       .reps = 200,
                       .commits = 200,
                       .k = 15,
                       .window = 10,
                       .check_commits = 1000,
                       .seed = 1,
                       .metric = METRIC_SIDE_FLOOR};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        size_t seed = 0;
        int bad = 0;
        if (v && strcmp(a, "--draw") == 0) {
            const char *d = argv[++i];
            o->draw = strcmp(d, "random") == 0    ? DRAW_RANDOM
                      : strcmp(d, "ordered") == 0 ? DRAW_ORDERED
                                                  : DRAW_BLOCK;
            bad = o->draw == DRAW_BLOCK && strcmp(d, "block") != 0;
        } else if (v && strcmp(a, "--metric") == 0) {
            bad = parse_metric(argv[++i], &o->metric);
        } else if (v && strcmp(a, "--load") == 0)
            o->load = argv[++i];
        else if (v && strcmp(a, "--pool") == 0)
            o->pool = argv[++i];
        else if (v && strcmp(a, "--reps") == 0)
            bad = parse_size(argv[++i], &o->reps);
        else if (v && strcmp(a, "--commits") == 0)
            bad = parse_size(argv[++i], &o->commits);
        else if (v && strcmp(a, "--runs-per-commit") == 0)
            bad = parse_size(argv[++i], &o->k);
        else if (v && strcmp(a, "--window") == 0)
            bad = parse_size(argv[++i], &o->window);
        else if (v && strcmp(a, "--check-commits") == 0)
            bad = parse_size(argv[++i], &o->check_commits);
        else if (v && strcmp(a, "--seed") == 0) {
            bad = parse_size(argv[++i], &seed);
            o->seed = seed;
        } else
            bad = 1;
        if (bad) {
            fprintf(stderr, "bench_history: bad argument '%s'\n", a);
            return -1;
        }
    }
    if (o->load == NULL || o->reps == 0 || o->commits < 20 || o->k == 0 || o->check_commits < 20) {
        fprintf(stderr, "usage: bench_history --load DIR [--pool NAME] [--reps N] [--commits N "
                        ">= 20] [--runs-per-commit K] [--window W] [--seed S] [--draw "
                        "block|random|ordered] [--metric step_time_mean|step_time_p95|"
                        "step_time_floor|step_time_median|floor_runs_median]\n");
        return -1;
    }
    return 0;
}

static void print_header(int argc, char **argv, const struct sim *s, double *h)
{
    struct cg_cp_options d;
    cg_cp_defaults(&d);
    printf("* command:");
    for (int i = 0; i < argc; i++)
        printf(" %s", argv[i]);
    struct cg_welford w;
    cg_welford_init(&w);
    for (size_t i = 0; i < s->n_runs; i++)
        cg_welford_add(&w, s->runs[i]);
    printf(
        "\n* pool '%s': %zu runs, %s per run: median %.2f ms, CV %.1f%%\n", s->o->pool, s->n_runs,
        s->o->metric < METRIC_MEDIAN ? "step_time_floor" : metric_name(s->o->metric),
        cg_bench_median(s->runs, s->n_runs) / 1e6, 100.0 * sqrt(cg_welford_variance(&w)) / w.mean);
    /* The commit values' own spread, from one long history without change. */
    struct sim c = *s;
    make_history(&c, h, s->o->commits, s->o->draw);
    cg_welford_init(&w);
    for (size_t i = 0; i < s->o->commits; i++)
        cg_welford_add(&w, h[i]);
    printf("* a commit's value: %s of %zu runs' %s (%s), CV %.1f%% between commits\n",
           s->o->metric == METRIC_SIDE_FLOOR ? "the median over the fast runs" : "the median",
           s->o->k,
           s->o->metric < METRIC_MEDIAN ? "step_time_floor" : metric_name(s->o->metric),
           s->o->draw == DRAW_RANDOM  ? "drawn with replacement"
           : s->o->draw == DRAW_BLOCK ? "consecutive from a random place, commits independent"
                                      : "consecutive, commit after commit, in the order measured",
           100.0 * sqrt(cg_welford_variance(&w)) / w.mean);
    printf("* detection: min_segment %zu, alpha %g, %d permutations, at most %zu points; a step "
           "is found by a point within %zu commits\n\n",
           d.min_segment, d.alpha, d.permutations, d.max_points, s->o->window);
}

int main(int argc, char **argv)
{
    struct opts o;
    struct pool p = {0};
    struct sim s = {0};
    double *h = NULL;
    int rc = 1;
    if (parse_opts(argc, argv, &o) != 0)
        return 2;
    snprintf(p.name, sizeof(p.name), "%s", o.pool);
    cg_artifact_init(&p.a);
    if (cg_detect_load_pool(o.load, &p) != 0 || p.a.n_runs == 0)
        goto done;
    if (o.draw == DRAW_ORDERED && o.commits * o.k > p.a.n_runs) {
        fprintf(stderr, "bench_history: --draw ordered needs %zu runs, pool %s has %zu\n",
                o.commits * o.k, o.pool, p.a.n_runs);
        goto done;
    }
    s = (struct sim){.o = &o, .n_runs = p.a.n_runs, .rng = o.seed};
    s.runs = malloc(p.a.n_runs * sizeof(*s.runs));
    s.draw = malloc(o.k * sizeof(*s.draw));
    h = malloc((o.commits > o.check_commits ? o.commits : o.check_commits) * sizeof(*h));
    if (!s.runs || !s.draw || !h)
        goto done;
    for (size_t i = 0; i < p.a.n_runs; i++) {
        const struct cg_run *run = &p.a.runs[i];
        s.runs[i] = o.metric == METRIC_MEDIAN ? run->summary.step_time_median_ns
                    : o.metric < METRIC_MEDIAN
                        ? cg_floor_run_ns(run)
                        : cg_verdict_run_value(run, (enum cg_metric)o.metric);
        if (!(s.runs[i] > 0)) {
            fprintf(stderr, "bench_history: run %zu of pool %s has no value\n", i, o.pool);
            goto done;
        }
    }
    print_header(argc, argv, &s, h);

    static const double sizes[] = {0.0, 2.0, 5.0, 10.0};
    printf("| history of %zu commits | histories | step found (95%% Wilson) | delay in commits: "
           "p10 / median / p90 | shift reported (median) | interval covers the step | other "
           "change points per 1000 commits |\n|---|---:|---:|---:|---:|---:|---:|\n",
           o.commits);
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        struct tally t;
        char name[64];
        if (tally_init(&t, o.reps) != 0)
            goto done;
        snprintf(name, sizeof(name), sizes[i] == 0 ? "no change" : "one step of %+.0f%%", sizes[i]);
        int bad = run_steps(&s, sizes[i], h, &t);
        if (bad == 0)
            print_step_row(name, sizes[i], &t);
        tally_release(&t);
        if (bad)
            goto done;
    }
    printf("\n| drift | histories | with a change point (95%% Wilson) | points per history | "
           "reported total: median (p10 to p90) | histories showing half the drift or more | "
           "largest single shift (median) |\n|---|---:|---:|---:|---:|---:|---:|\n");
    struct tally t;
    if (tally_init(&t, o.reps) != 0)
        goto done;
    int bad = run_drift(&s, h, &t);
    if (bad == 0)
        print_drift_row(&t);
    tally_release(&t);
    if (bad)
        goto done;

    printf("\n| one check of | changes | points | seconds per check: median / max of %d |\n"
           "|---|---:|---:|---:|\n",
           TIMING_REPEATS);
    static const int changes[] = {0, 3, 15};
    for (size_t i = 0; i < sizeof(changes) / sizeof(changes[0]); i++) {
        int steps = changes[i];
        double med, max;
        size_t points;
        if (time_checks(&s, o.check_commits, steps, &med, &max, &points) != 0)
            goto done;
        printf("| %zu commits | %d | %zu | %.3f / %.3f |\n", o.check_commits, steps, points, med,
               max);
    }
    rc = 0;
done:
    free(s.runs);
    free(s.draw);
    free(h);
    free(p.secs);
    cg_artifact_release(&p.a);
    return rc;
}
