/*
 * bench_detect: the gate's false-alarm and detection rates on this machine with the built-in CPU
 * canary and its real noise, next to the naive rule "fail when one run's mean step time is more
 * than 10% above one baseline run". Run it through bench/detect; figures go to bench/RESULTS.md.
 *
 * Collection. Pools of runs are measured interleaved, one canary run at a time, each run one
 * 'canary-gate run --runs 1' process (the tool as CI runs it, with the injection library): pool
 * "aa" is the unchanged canary (canary-train --preset tiny), and each injected regression is a
 * pool of the same canary with --extra-work PCT (--work PCT/N: with --extra-work-every N, the
 * extra work on every N-th step only, a periodic regression that leaves the fast steps alone).
 * Every round measures the aa pool three times (it
 * feeds both sides of the A/A decisions and the baselines) and every other pool once, in a
 * rotating order, so load and drift fall on all pools alike. A pool stops when every rule has
 * the decisions asked for from it; the others go on. --save DIR keeps the pools (artifacts and
 * per-run seconds), --load DIR evaluates recorded pools again without running anything.
 *
 * Decisions. Each rule walks the pools from their start, in the order the runs were measured.
 * A gate decision's baseline is the base_n aa runs measured just before its first current run
 * (--baseline-age ROUNDS: ending that many rounds earlier), for A/A and detection decisions
 * alike, so both meet the same drift between baseline and check. A/A decision i takes its
 * current runs from the aa pool after its baseline, a level's decision i from that level's pool
 * (first look, added runs, confirmation); first looks within a set never share a run, while
 * baselines overlap (rolling, as the Action's pooled recordings do) and are shared across sets.
 * Naive decisions: aa runs 2i and 2i+1 (A/A), aa run 3i and level run i (the same round).
 * Paired decisions ('canary-gate ab': one look, and its default of more pairs while
 * inconclusive): runs measured close together form the pairs (A/A: aa runs 2j and 2j+1; a
 * level: its run r and aa run 3r of the same round), taken in order.
 * Canary time of a decision is the wall time of its current side's runs (first look, added runs,
 * confirmation); the baseline, recorded once per main commit, is shown apart. A paired decision
 * runs both sides, so its canary time counts both.
 */
#include "bench.h"
#include "detect_model.h"
#include "detect_pool.h"

#include "artifact.h"
#include "cmd_seq.h"
#include "paired.h"
#include "sequential.h"
#include "thresholds.h"
#include "verdict.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_POOLS 8
#define NAIVE_PCT 10.0
/* Recordings the Action's baseline pools by default (ci/baseline-publish --keep). */
#define CG_BASELINE_RECORDINGS 5


struct opts {
    const char *thresholds, *save, *load;
    size_t aa, per_level;
    size_t confirm_runs; /* 0: the main command's default */
    size_t skip_rounds;  /* --load: leave out the runs of the first N collection rounds */
    size_t base_runs; /* runs in a gate decision's baseline (default 5 recordings of 'runs') */
    size_t age;       /* rounds between a gate decision's baseline and its first current run */
    double work[MAX_POOLS];
    long every[MAX_POOLS]; /* --work PCT/N: the extra work on every N-th step (1: every step) */
    size_t n_work;
    double levels[MAX_POOLS]; /* the regressions the --extra-work values stand for, percent */
    size_t max_rounds;
    bool quick;
    const char *model; /* --model SHARE:LO:HI: pools drawn from detect_model.h, not measured */
};

struct rule {
    const char *name;
    bool naive;
    /* max runs = factor x runs (paired: x the first look's pairs); 1: one look */
    size_t max_factor;
    bool confirm;
    bool paired; /* canary-gate ab: pairs of runs measured close together */
};

/* The paired rule is shown for comparison; collection stops without waiting for it. */
static const struct rule rules[] = {
    {"naive: 1 run vs 1 run, > 10%", true, 0, false, false},
    {"gate, one look (compare)", false, 1, false, false},
    {"gate, sequential + confirmation (main command)", false, CG_GATE_MAX_RUNS_FACTOR, true, false},
    {"ab: `runs` pairs measured together (one look)", false, 1, false, true},
    {"ab: `runs` pairs, up to twice as many while inconclusive (canary-gate ab)", false,
     CG_AB_MAX_PAIRS_FACTOR, false, true},
};
#define N_RULES (sizeof(rules) / sizeof(rules[0]))

struct tally {
    size_t n, fail, inconclusive, pass, added, confirmed, rejected;
    size_t metric_fail[CG_M_COUNT]; /* decisions that FAILed on each metric */
    double *secs; /* canary seconds per decision */
    double runs;  /* current runs, summed */
    double base_secs;
};

/* ---- collection -------------------------------------------------------------------------- */

static double load_avg(void)
{
    double l = NAN;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f != NULL) {
        if (fscanf(f, "%lf", &l) != 1)
            l = NAN;
        fclose(f);
    }
    return l;
}

/* ---- decisions --------------------------------------------------------------------------- */

struct stream {
    const struct pool *p;
    size_t next;
};

/* Appends runs [from, from + n) of pool p to dst (header first when dst is empty); the
 * seconds they took are added to *secs. -1 when the pool has too few. */
static int take_at(const struct pool *p, size_t from, size_t n, struct cg_artifact *dst,
                   double *secs)
{
    if (from + n > p->a.n_runs)
        return -1;
    if (dst->n_runs == 0 && dst->env.canary_hash == NULL &&
        cg_artifact_copy_header(dst, &p->a) != 0)
        return -1;
    struct cg_artifact view = p->a; /* shallow: only read by the copy */
    view.runs = p->a.runs + from;
    view.n_runs = n;
    if (cg_artifact_append_runs(dst, &view) != 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        *secs += p->secs[from + i];
    return 0;
}

static int stream_measure(void *ctx, struct cg_artifact *a, size_t n, bool confirming,
                          double *seconds, struct cg_err *err)
{
    (void)confirming;
    struct stream *s = ctx;
    *seconds = 0.0;
    if (take_at(s->p, s->next, n, a, seconds) != 0)
        return cg_err_set(err, CG_ECANARY, "pool %s exhausted", s->p->name);
    s->next += n;
    return 0;
}

struct decision {
    enum cg_outcome overall;
    size_t runs;
    double secs;
    bool added;
    enum cg_confirm confirm;
    unsigned fail_mask; /* bit m: metric m FAILed */
};

static unsigned verdict_fail_mask(const struct cg_verdict *v)
{
    unsigned mask = 0;
    for (int m = 0; m < CG_M_COUNT; m++)
        mask |= v->metrics[m].outcome == CG_OUT_FAIL ? 1u << m : 0u;
    return mask;
}

/* --confirm-runs (0: the main command's default, CG_GATE_CONFIRM_FACTOR x runs), read by
 * gate_decision. */
static size_t confirm_runs_opt;

/* One gate decision: baseline = runs [base_at, base_at + base_n) of the aa pool (their seconds
 * into *base_s), current runs from s. -1 when a pool ran out (no decision). */
static int gate_decision(const struct rule *r, const struct cg_thresholds *t, const struct pool *aa,
                         size_t base_at, size_t base_n, struct stream *s, struct decision *d,
                         double *base_s)
{
    struct cg_artifact base, cur, conf;
    struct cg_seq seq;
    struct cg_err err;
    double first_s = 0.0;
    size_t runs = (size_t)t->runs;
    int rc = -1;
    cg_artifact_init(&base);
    cg_artifact_init(&cur);
    cg_artifact_init(&conf);
    *base_s = 0.0;
    if (take_at(aa, base_at, base_n, &base, base_s) != 0 ||
        take_at(s->p, s->next, runs, &cur, &first_s) != 0)
        goto done;
    s->next += runs;
    struct cg_seq_opts o = {runs * r->max_factor, 0, 0, CG_SPEND_POCOCK, r->confirm,
                            confirm_runs_opt, false};
    if (cg_seq_decide(&base, &cur, &conf, t, &o, first_s, stream_measure, s, &seq, &err) != 0)
        goto done;
    d->overall = seq.verdict.overall;
    d->runs = cur.n_runs + conf.n_runs;
    d->secs = seq.info.canary_s + seq.info.confirm_s;
    d->added = seq.info.looks > 1;
    d->confirm = seq.info.confirm;
    d->fail_mask = verdict_fail_mask(&seq.verdict);
    cg_seq_release(&seq);
    rc = 0;
done:
    cg_artifact_release(&base);
    cg_artifact_release(&cur);
    cg_artifact_release(&conf);
    return rc;
}

static void tally_add(struct tally *t, const struct decision *d, double base_secs)
{
    t->secs[t->n++] = d->secs;
    t->fail += d->overall == CG_OUT_FAIL;
    t->inconclusive += d->overall == CG_OUT_INCONCLUSIVE;
    t->pass += d->overall == CG_OUT_PASS;
    t->added += d->added;
    t->confirmed += d->confirm == CG_CONFIRM_CONFIRMED;
    t->rejected += d->confirm == CG_CONFIRM_REJECTED;
    for (int m = 0; m < CG_M_COUNT; m++)
        t->metric_fail[m] += (d->fail_mask >> m) & 1u;
    t->runs += (double)d->runs;
    t->base_secs += base_secs;
}

static double run_mean(const struct pool *p, size_t i)
{
    return p->a.runs[i].summary.step_time_mean_ns;
}

/* Pairs of runs measured close together, drawn in order for paired decisions: A/A pair j is aa
 * runs 2j and 2j + 1 (measured one after the other); a level's pair j is its run j and the first
 * aa run of the same round (aa run 3j). */
struct pair_stream {
    const struct pool *aa, *level; /* level NULL: A/A */
    size_t next;                   /* the next pair */
    struct cg_artifact base;       /* the decision's base runs */
    double base_s;                 /* canary time of the base runs taken */
};

/* cg_seq_measure_fn: n more pairs, the base's runs into ps->base, the head's into head. */
static int pair_measure(void *ctx, struct cg_artifact *head, size_t n, bool confirming,
                        double *seconds, struct cg_err *err)
{
    struct pair_stream *ps = ctx;
    (void)confirming;
    *seconds = 0.0;
    for (size_t k = 0; k < n; k++, ps->next++) {
        size_t j = ps->next;
        const struct pool *hp = ps->level ? ps->level : ps->aa;
        size_t b = ps->level ? 3 * j : 2 * j, h = ps->level ? j : 2 * j + 1;
        double bs = 0.0;
        if (take_at(ps->aa, b, 1, &ps->base, &bs) != 0 || take_at(hp, h, 1, head, seconds) != 0)
            return cg_err_set(err, CG_ECANARY, "pool exhausted");
        *seconds += bs;
        ps->base_s += bs;
    }
    return 0;
}

/* One paired decision as 'canary-gate ab' takes it: the first look's pairs from ps, more while
 * a metric is inconclusive up to max_factor x the first look's (sequential.h). -1 when a pool
 * ran out (no decision). Both sides' runs are canary time. */
static int paired_decision(const struct rule *r, const struct cg_thresholds *t,
                           struct pair_stream *ps, struct decision *d, double *base_s)
{
    struct cg_artifact head;
    struct cg_seq seq;
    struct cg_err err;
    size_t first = (size_t)t->runs;
    double first_s = 0.0;
    int rc = -1;
    cg_artifact_init(&ps->base);
    cg_artifact_init(&head);
    ps->base_s = 0.0;
    if (pair_measure(ps, &head, first, false, &first_s, &err) != 0)
        goto done;
    struct cg_seq_opts o = {
        first * r->max_factor, (size_t)t->runs, 0, CG_SPEND_POCOCK, false, 0, true};
    if (cg_seq_decide(&ps->base, &head, NULL, t, &o, first_s, pair_measure, ps, &seq, &err) != 0)
        goto done;
    *d = (struct decision){seq.verdict.overall,   head.n_runs,
                           seq.info.canary_s,     seq.info.looks > 1,
                           CG_CONFIRM_NOT_NEEDED, verdict_fail_mask(&seq.verdict)};
    *base_s = ps->base_s;
    cg_seq_release(&seq);
    rc = 0;
done:
    cg_artifact_release(&ps->base);
    cg_artifact_release(&head);
    return rc;
}

/* A paired rule: decisions walk the pairs of A/A and of each level in order, each taking the
 * pairs it asks for. */
static void evaluate_paired(const struct rule *r, const struct cg_thresholds *t,
                            const struct pool *pools, size_t n_pools, size_t want_aa,
                            size_t want_level, struct tally *tallies)
{
    struct decision d;
    double bs;
    for (size_t l = 0; l < n_pools; l++) {
        struct pair_stream ps = {.aa = &pools[0], .level = l == 0 ? NULL : &pools[l]};
        size_t want = l == 0 ? want_aa : want_level;
        while (tallies[l].n < want && paired_decision(r, t, &ps, &d, &bs) == 0)
            tally_add(&tallies[l], &d, bs);
    }
}

/* Evaluates rule r on the pools: set 0 is A/A, set 1 + l is level l. tallies[set] filled. A gate
 * decision's baseline ends `age` collection rounds before its first current run. */
static void evaluate(const struct rule *r, const struct cg_thresholds *t, const struct pool *pools,
                     size_t n_pools, size_t base_n, size_t age, size_t want_aa, size_t want_level,
                     struct tally *tallies)
{
    const struct pool *aa = &pools[0];
    size_t runs = (size_t)t->runs;
    for (size_t k = 0; k < n_pools; k++) {
        double *keep = tallies[k].secs;
        memset(&tallies[k], 0, sizeof(tallies[k]));
        tallies[k].secs = keep;
    }
    struct decision d;
    double bs;
    if (r->paired) {
        evaluate_paired(r, t, pools, n_pools, want_aa, want_level, tallies);
        return;
    }
    if (r->naive) {
        for (size_t i = 0; 2 * i + 1 < aa->a.n_runs && tallies[0].n < want_aa; i++) {
            bool fail = run_mean(aa, 2 * i + 1) > run_mean(aa, 2 * i) * (1 + NAIVE_PCT / 100);
            d = (struct decision){fail ? CG_OUT_FAIL : CG_OUT_PASS, 1, aa->secs[2 * i + 1], false,
                                  CG_CONFIRM_NOT_NEEDED, fail ? 1u : 0u};
            tally_add(&tallies[0], &d, aa->secs[2 * i]);
        }
        for (size_t k = 1; k < n_pools; k++) {
            const struct pool *p = &pools[k];
            for (size_t i = 0; i < p->a.n_runs && 3 * i < aa->a.n_runs && tallies[k].n < want_level;
                 i++) {
                bool fail = run_mean(p, i) > run_mean(aa, 3 * i) * (1 + NAIVE_PCT / 100);
                d = (struct decision){fail ? CG_OUT_FAIL : CG_OUT_PASS, 1, p->secs[i], false,
                                      CG_CONFIRM_NOT_NEEDED, fail ? 1u : 0u};
                tally_add(&tallies[k], &d, aa->secs[3 * i]);
            }
        }
        return;
    }
    /* Every gate decision's baseline is base_n aa runs ending `age` rounds before its first
     * current run (default 0: the aa runs measured just before, a rolling baseline as the Action
     * keeps one, the newest recordings pooled), so A/A and detection decisions meet the same
     * drift. A/A decision i's first look starts `runs` after decision i - 1's, so first looks
     * never share a run; the runs a decision adds or confirms with may be later decisions' first
     * looks (a decision is the gate's verdict on the runs as they came; neighbours are
     * correlated). A level's run j was measured in round j, beside aa runs 3j to 3j + 2. */
    size_t gap = 3 * age;
    while (tallies[0].n < want_aa) {
        struct stream s = {aa, base_n + gap + tallies[0].n * runs};
        size_t at = s.next - gap - base_n;
        if (gate_decision(r, t, aa, at, base_n, &s, &d, &bs) != 0)
            break;
        tally_add(&tallies[0], &d, bs);
    }
    for (size_t k = 1; k < n_pools; k++) {
        for (size_t i = 0; tallies[k].n < want_level; i++) {
            struct stream ls = {&pools[k], i * runs};
            size_t end = 3 * ls.next;
            if (ls.next >= pools[k].a.n_runs || end > aa->a.n_runs)
                break;
            if (end < gap + base_n)
                continue;
            size_t at = end - gap - base_n;
            if (gate_decision(r, t, aa, at, base_n, &ls, &d, &bs) != 0)
                break;
            tally_add(&tallies[k], &d, bs);
        }
    }
}

/* ---- report ------------------------------------------------------------------------------ */

/* Wilson score interval (95%) of k successes in n. */
static void wilson(size_t k, size_t n, double *lo, double *hi)
{
    if (n == 0) {
        *lo = *hi = NAN;
        return;
    }
    double z = 1.959963984540054, p = (double)k / (double)n, nn = (double)n;
    double c = (p + z * z / (2 * nn)) / (1 + z * z / nn);
    double h = z * sqrt(p * (1 - p) / nn + z * z / (4 * nn * nn)) / (1 + z * z / nn);
    *lo = fmax(0.0, c - h);
    *hi = fmin(1.0, c + h);
}

static void print_pools(const struct pool *pools, size_t n)
{
    const struct pool *aa = &pools[0];
    double *la = malloc(aa->a.n_runs * sizeof(double));
    printf("| pool | --extra-work | runs | median run mean step | change vs aa (HL, 95%%) | "
           "between-run CV | step time floor (change vs aa) | seconds per run (median) |\n"
           "|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for (size_t i = 0; la != NULL && i < aa->a.n_runs; i++)
        la[i] = log(run_mean(aa, i));
    for (size_t k = 0; k < n; k++) {
        const struct pool *p = &pools[k];
        size_t m = p->a.n_runs;
        double *v = malloc((m ? m : 1) * sizeof(double)),
               *lv = malloc((m ? m : 1) * sizeof(double));
        if (v == NULL || lv == NULL || la == NULL || m == 0) {
            free(v);
            free(lv);
            continue;
        }
        struct cg_welford w;
        cg_welford_init(&w);
        for (size_t i = 0; i < m; i++) {
            v[i] = run_mean(p, i);
            lv[i] = log(v[i]);
            cg_welford_add(&w, v[i]);
        }
        char change[96] = "&mdash;";
        struct cg_shift sh;
        if (k > 0 && cg_stats_hl_shift(la, aa->a.n_runs, lv, m, 0.025, &sh) == 0)
            snprintf(change, sizeof(change), "%+.2f%% (%+.2f%% to %+.2f%%)",
                     (exp(sh.estimate) - 1) * 100, (exp(sh.low) - 1) * 100,
                     (exp(sh.high) - 1) * 100);
        double fl = cg_floor_side_ns(p->a.runs, m),
               fl0 = cg_floor_side_ns(aa->a.runs, aa->a.n_runs);
        char floor_s[64];
        if (k > 0)
            snprintf(floor_s, sizeof(floor_s), "%.2f ms (%+.2f%%)", fl / 1e6, (fl / fl0 - 1) * 100);
        else
            snprintf(floor_s, sizeof(floor_s), "%.2f ms", fl / 1e6);
        printf("| %s | %g | %zu | %.2f ms | %s | %.1f%% | %s | %.2f |\n", p->name, p->work_pct, m,
               cg_bench_median(v, m) / 1e6, change, sqrt(cg_welford_variance(&w)) / w.mean * 100,
               floor_s, cg_bench_median(p->secs, m));
        free(v);
        free(lv);
    }
    free(la);
    /* Lag-1 autocorrelation of the aa run means in the order measured: runs close in time are
     * alike when the load comes in spells, and blocks of consecutive runs are not exchangeable. */
    size_t m = aa->a.n_runs;
    if (m > 2) {
        double mean = 0, var = 0, cov = 0;
        for (size_t i = 0; i < m; i++)
            mean += run_mean(aa, i) / (double)m;
        for (size_t i = 0; i < m; i++) {
            double d = run_mean(aa, i) - mean;
            var += d * d;
            if (i + 1 < m)
                cov += d * (run_mean(aa, i + 1) - mean);
        }
        printf("\naa run means in the order measured: lag-1 autocorrelation %.2f (0 when runs "
               "are exchangeable)\n",
               var > 0 ? cov / var : 0.0);
    }
}

static void print_tally(const char *rule, const char *set, const struct tally *t)
{
    double lo, hi;
    wilson(t->fail, t->n, &lo, &hi);
    double n = (double)(t->n ? t->n : 1);
    double p95 = t->n ? cg_stats_quantile(t->secs, t->n, 0.95) : NAN;
    double mx = t->n ? cg_stats_quantile(t->secs, t->n, 1.0) : NAN;
    double mean = t->n ? cg_stats_mean(t->secs, t->n) : NAN;
    char by[160] = "";
    size_t k = 0;
    for (int m = 0; m < CG_M_COUNT && k < sizeof(by); m++) {
        if (t->metric_fail[m] > 0)
            k += (size_t)snprintf(by + k, sizeof(by) - k, "%s%s %zu", k ? ", " : "",
                                  cg_metric_name((enum cg_metric)m), t->metric_fail[m]);
    }
    printf("| %s | %s | %zu | %zu | %zu | %zu | **%.1f%%** (%.1f to %.1f) | %s | %.1f / %.1f / "
           "%.1f | %.1f | %.1f | %zu | %zu / %zu |\n",
           rule, set, t->n, t->fail, t->inconclusive, t->pass, 100.0 * (double)t->fail / n,
           100 * lo, 100 * hi, k ? by : "&mdash;", mean, p95, mx, t->base_secs / n, t->runs / n,
           t->added, t->confirmed, t->rejected);
}

/* ---- main -------------------------------------------------------------------------------- */

/* A list of numbers "A,B,...", each optionally "A/N" when `every` is given (N >= 1, else 1). */
static int parse_list(const char *s, double *out, long *every, size_t max, size_t *n)
{
    char *end;
    *n = 0;
    while (*s && *n < max) {
        errno = 0;
        double v = strtod(s, &end);
        if (end == s || errno != 0 || v < 0)
            return -1;
        if (every != NULL) {
            every[*n] = 1;
            if (*end == '/') {
                const char *d = end + 1;
                every[*n] = strtol(d, &end, 10);
                if (end == d || every[*n] < 1 || every[*n] > 1000000)
                    return -1;
            }
        }
        out[(*n)++] = v;
        s = *end == ',' ? end + 1 : end;
        if (*end != ',' && *end != '\0')
            return -1;
    }
    return *n > 0 ? 0 : -1;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
    const char *work = "4,10,20", *levels = "2,5,10";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--quick") == 0) {
            o->quick = true;
            o->aa = 3;
            o->per_level = 1;
        } else if (v != NULL && strcmp(a, "--thresholds") == 0) {
            o->thresholds = argv[++i];
        } else if (v != NULL && strcmp(a, "--save") == 0) {
            o->save = argv[++i];
        } else if (v != NULL && strcmp(a, "--load") == 0) {
            o->load = argv[++i];
        } else if (v != NULL && strcmp(a, "--model") == 0) {
            o->model = argv[++i];
        } else if (v != NULL && strcmp(a, "--aa") == 0) {
            o->aa = strtoul(argv[++i], NULL, 10);
        } else if (v != NULL && strcmp(a, "--skip-rounds") == 0) {
            o->skip_rounds = strtoul(argv[++i], NULL, 10);
        } else if (v != NULL && strcmp(a, "--confirm-runs") == 0) {
            o->confirm_runs = strtoul(argv[++i], NULL, 10);
        } else if (v != NULL && strcmp(a, "--baseline-runs") == 0) {
            o->base_runs = strtoul(argv[++i], NULL, 10);
        } else if (v != NULL && strcmp(a, "--baseline-age") == 0) {
            o->age = strtoul(argv[++i], NULL, 10);
            if (o->age > 1000000) {
                fprintf(stderr, "bench_detect: --baseline-age %s: at most 1000000 rounds\n",
                        argv[i]);
                return -1;
            }
        } else if (v != NULL && strcmp(a, "--per-level") == 0) {
            o->per_level = strtoul(argv[++i], NULL, 10);
        } else if (v != NULL && strcmp(a, "--max-rounds") == 0) {
            o->max_rounds = strtoul(argv[++i], NULL, 10);
        } else if (v != NULL && strcmp(a, "--work") == 0) {
            work = argv[++i];
        } else if (v != NULL && strcmp(a, "--levels") == 0) {
            levels = argv[++i];
        } else {
            fprintf(stderr,
                    "usage: bench_detect [--quick] [--aa N] [--per-level N] [--work PCT[/N],...]\n"
                    "                    [--levels PCT,...] [--thresholds SPEC] [--save DIR]\n"
                    "                    [--load DIR] [--max-rounds N] [--baseline-runs N]\n"
                    "                    [--confirm-runs N] [--skip-rounds N] [--baseline-age "
                    "ROUNDS]\n"
                    "                    [--model SHARE:LO:HI]\n");
            return -1;
        }
    }
    size_t nl = 0;
    if (parse_list(work, o->work, o->every, MAX_POOLS - 1, &o->n_work) != 0 ||
        parse_list(levels, o->levels, NULL, MAX_POOLS - 1, &nl) != 0 || nl != o->n_work) {
        fprintf(stderr, "bench_detect: --work and --levels need as many numbers each\n");
        return -1;
    }
    return 0;
}

static void print_header(int argc, char **argv, const struct cg_thresholds *t, const struct opts *o,
                         double load0)
{
    char when[64], cpu[256] = "unknown";
    time_t now = time(NULL);
    strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", gmtime(&now));
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "model name", 10) == 0 && strchr(line, ':') != NULL) {
            snprintf(cpu, sizeof(cpu), "%s", strchr(line, ':') + 2);
            cpu[strcspn(cpu, "\n")] = '\0';
            break;
        }
    }
    if (f)
        fclose(f);
    printf("## bench_detect, %s\n\n", when);
    printf("* command:");
    for (int i = 0; i < argc; i++)
        printf(" %s", argv[i]);
    printf("\n* machine: %s, %ld online CPUs; load average (1 min) at start %.2f\n", cpu,
           sysconf(_SC_NPROCESSORS_ONLN), load0);
    if (o->model != NULL)
        printf("* runs drawn from a model, not measured (--model %s): %lld steps a run, each at "
               "20 ms x (1 + the level) x its process's level (lognormal, CV 1.5%%) x its state "
               "(slow for the whole process with that share, LO to HI%% slower) x a step's noise "
               "(lognormal, CV 2%%); the figures are the decision procedure's under the model\n",
               o->model, (long long)t->steps);
    else
        printf("* canary: %s --preset tiny --steps %lld (%lld measured after %lld warm-up), one "
               "'canary-gate run --runs 1' per run\n",
               TRAIN, (long long)(t->steps + t->warmup), (long long)t->steps,
               (long long)t->warmup);
    printf("* thresholds: %s (runs %lld, step_time_mean +%.1f%%, step_time_floor +%.1f%%, alpha "
           "%.3g)%s\n",
           t->source, (long long)t->runs, t->metric[CG_M_STEP_TIME_MEAN].max_regression_pct,
           t->metric[CG_M_STEP_TIME_FLOOR].max_regression_pct,
           t->metric[CG_M_STEP_TIME_MEAN].alpha, o->load ? "; recorded pools from --load" : "");
    char when_base[64] = "those measured just before";
    if (o->age > 0)
        snprintf(when_base, sizeof(when_base), "ending %zu collection rounds before", o->age);
    printf("* gate baselines: %zu aa runs each, %s the decision's first current run, for A/A and "
           "detection decisions alike (the Action pools its newest %d recordings of %lld runs)\n\n",
           o->base_runs, when_base, CG_BASELINE_RECORDINGS, (long long)t->runs);
}

/* True when every rule has its decisions (or the pools of set k are marked done). */
static bool enough(const struct cg_thresholds *t, struct pool *pools, size_t n,
                   const struct opts *o, struct tally *tl)
{
    bool all = true;
    for (size_t k = 0; k < n; k++)
        pools[k].done = true;
    for (size_t r = 0; r < N_RULES; r++) {
        if (rules[r].paired)
            continue;
        evaluate(&rules[r], t, pools, n, o->base_runs, o->age, o->aa, o->per_level, tl);
        if (tl[0].n < o->aa) {
            pools[0].done = false;
            all = false;
        }
        for (size_t k = 1; k < n; k++) {
            if (tl[k].n < o->per_level) {
                pools[k].done = false;
                /* A level decision's baseline is the aa runs of its rounds. */
                pools[0].done = false;
                all = false;
            }
        }
    }
    return all;
}

static int collect(const struct cg_thresholds *t, struct pool *pools, size_t n,
                   const struct opts *o, struct tally *tl)
{
    char tmp[] = "/tmp/bench_detect.XXXXXX";
    if (mkdtemp(tmp) == NULL)
        return -1;
    int rc = 0;
    double t0 = cg_bench_now_s(), lmin = INFINITY, lmax = 0;
    size_t round = 0;
    /* Decisions are counted again every 5 rounds (cheap next to the runs, not free). */
    while ((round % 5 != 0 || !enough(t, pools, n, o, tl)) &&
           (o->max_rounds == 0 || round < o->max_rounds)) {
        /* aa three times (an A/A decision takes about three times the runs of a detection, and
         * a level's baselines are the aa runs of its rounds), the others once, rotating so no
         * pool always runs first. */
        size_t order[3 * MAX_POOLS], m = 0;
        for (size_t k = 0; k < n; k++) {
            if (k == n / 3 || k == 2 * n / 3)
                order[m++] = 0;
            order[m++] = (k + round) % n;
        }
        for (size_t i = 0; i < m && rc == 0; i++) {
            if (!pools[order[i]].done)
                rc = cg_detect_measure_one(&pools[order[i]], t, tmp);
        }
        double l = load_avg();
        lmin = fmin(lmin, l);
        lmax = fmax(lmax, l);
        round++;
        fprintf(stderr, "bench_detect: round %zu, %.0f s, load %.2f; runs:", round,
                cg_bench_now_s() - t0, l);
        for (size_t k = 0; k < n; k++)
            fprintf(stderr, " %s %zu", pools[k].name, pools[k].a.n_runs);
        fprintf(stderr, "\n");
        if (rc != 0)
            break;
        if (o->save != NULL && round % 20 == 0)
            cg_detect_save_pools(o->save, pools, n);
    }
    if (o->save != NULL)
        cg_detect_save_pools(o->save, pools, n);
    printf("* collection: %zu rounds, %.0f s of wall time; load average (1 min) between %.2f "
           "and %.2f while measuring\n\n",
           round, cg_bench_now_s() - t0, round ? lmin : NAN, round ? lmax : NAN);
    char path[600];
    snprintf(path, sizeof(path), "%s/run.json", tmp);
    unlink(path);
    snprintf(path, sizeof(path), "%s/run.log", tmp);
    unlink(path);
    rmdir(tmp);
    return rc;
}

int main(int argc, char **argv)
{
    struct opts o = {.thresholds = "default", .aa = 200, .per_level = 100};
    struct pool pools[MAX_POOLS];
    struct tally tl[MAX_POOLS];
    struct cg_thresholds t;
    struct cg_err err;
    int rc = 1;
    if (parse_opts(argc, argv, &o) != 0)
        return 2;
    if (cg_thresholds_load(o.thresholds, &t, &err) != 0) {
        fprintf(stderr, "bench_detect: %s\n", err.msg);
        return 2;
    }
    confirm_runs_opt = o.confirm_runs ? o.confirm_runs : CG_GATE_CONFIRM_FACTOR * (size_t)t.runs;
    if (o.base_runs == 0)
        o.base_runs = (size_t)(CG_BASELINE_RECORDINGS * t.runs);
    size_t n = o.n_work + 1, want = o.aa > o.per_level ? o.aa : o.per_level;
    memset(pools, 0, sizeof(pools));
    for (size_t k = 0; k < n; k++) {
        cg_artifact_init(&pools[k].a);
        pools[k].work_pct = k ? o.work[k - 1] : 0.0;
        pools[k].every = k ? o.every[k - 1] : 1;
        if (k == 0)
            snprintf(pools[k].name, sizeof(pools[k].name), "aa");
        else if (pools[k].every > 1)
            snprintf(pools[k].name, sizeof(pools[k].name), "w%ge%ld", o.work[k - 1],
                     pools[k].every);
        else
            snprintf(pools[k].name, sizeof(pools[k].name), "w%g", o.work[k - 1]);
        tl[k].secs = malloc((want + 1) * sizeof(double));
        if (tl[k].secs == NULL)
            return 1;
    }
    double load0 = load_avg();
    print_header(argc, argv, &t, &o, load0);
    for (size_t k = 0; o.load != NULL && k < n; k++) {
        if (cg_detect_load_pool(o.load, &pools[k]) != 0 ||
            cg_detect_skip_runs(&pools[k], k == 0 ? 3 : 1, o.skip_rounds) != 0)
            goto done;
    }
    struct cg_detect_model model;
    if (o.model != NULL) {
        if (cg_detect_model_parse(o.model, &model) != 0)
            goto done;
        /* enough runs for every decision: A/A decision i starts past its baseline and the earlier
         * decisions' first looks, a level's decision i at its run i x runs with the aa runs of
         * its rounds as baseline; added runs and confirmation take up to 4 x runs more */
        size_t runs = (size_t)t.runs, spare = 8 * runs + o.base_runs;
        size_t rounds = o.aa * runs / 3 + o.per_level * runs + spare;
        for (size_t k = 0; k < n; k++) {
            pools[k].work_pct = k ? o.levels[k - 1] : 0.0;
            if (cg_detect_model_pool(&pools[k], &model, &t, k == 0 ? 3 * rounds : rounds) != 0)
                goto done;
        }
    }
    if (o.load == NULL && o.model == NULL && collect(&t, pools, n, &o, tl) != 0)
        fprintf(stderr, "bench_detect: collection stopped early; figures below use what was "
                        "measured\n");
    printf("* load average (1 min) at the end: %.2f\n\n### Pools\n\n", load_avg());
    print_pools(pools, n);
    printf("\n### Decisions\n\nFAIL rate: of A/A decisions, false alarms; of a level, "
           "detections. Canary seconds per decision (current side: first look, added runs, "
           "confirmation): mean / p95 / max; the baseline's seconds apart.\n\n"
           "| rule | set | decisions | FAIL | INCONCLUSIVE | PASS | FAIL rate (95%% Wilson) | "
           "FAILed on | canary s per decision | baseline s | current runs per decision | "
           "runs added in | confirmed / not |\n"
           "|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|\n");
    for (size_t r = 0; r < N_RULES; r++) {
        evaluate(&rules[r], &t, pools, n, o.base_runs, o.age, o.aa, o.per_level, tl);
        for (size_t k = 0; k < n; k++) {
            char set[96];
            if (k == 0)
                snprintf(set, sizeof(set), "A/A");
            else if (o.every[k - 1] > 1)
                snprintf(set, sizeof(set), "+%g%% periodic (--extra-work %g every %ld steps)",
                         o.levels[k - 1], o.work[k - 1], o.every[k - 1]);
            else if (o.model != NULL)
                snprintf(set, sizeof(set), "+%g%% (every process)", o.levels[k - 1]);
            else
                snprintf(set, sizeof(set), "+%g%% (--extra-work %g)", o.levels[k - 1],
                         o.work[k - 1]);
            print_tally(rules[r].name, set, &tl[k]);
        }
    }
    rc = 0;
done:
    for (size_t k = 0; k < n; k++) {
        pools[k].a.n_runs += pools[k].hidden;
        cg_artifact_release(&pools[k].a);
        free(pools[k].secs);
        free(tl[k].secs);
    }
    return rc;
}
