/*
 * verdict_memory: the peak memory metrics' rule (docs/statistics.md, "Peak memory"): the sides'
 * medians against the limit when each side's runs are alike, the runs themselves when memory
 * differs between processes, and memory grown in some processes only.
 */
#include "verdict_internal.h"

#include "fmt.h"
#include "stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Peak memory grown in some processes only (a leak or a larger workspace in some runs), which
 * the medians do not show: the runs above the pooled median by more than the limit (both its
 * percent and bytes) are counted on each side, and a current share significantly above the
 * baseline's (Fisher's exact test, one-sided, at cg_verdict_memory_alpha) FAILs. Processes that
 * land in a high memory state as often on both sides do not (the test's size; docs/statistics.md).
 */
static void grown_share(const double *vb, size_t nb, const double *vc, size_t nc,
                        const struct cg_metric_limits *lim, enum cg_metric m,
                        struct cg_metric_result *r)
{
    double *all = malloc((nb + nc) * sizeof(*all));
    if (all == NULL)
        return; /* the medians decided */
    memcpy(all, vb, nb * sizeof(*all));
    memcpy(all + nb, vc, nc * sizeof(*all));
    double med = cg_stats_quantile(all, nb + nc, 0.5);
    free(all);
    double above =
        fmax(med * (1.0 + lim->max_regression_pct / 100.0), med + lim->max_regression_bytes);
    size_t hb = 0, hc = 0;
    double most = 0.0;
    for (size_t i = 0; i < nb; i++)
        hb += vb[i] > above;
    for (size_t i = 0; i < nc; i++) {
        hc += vc[i] > above;
        most = fmax(most, vc[i]);
    }
    double p = cg_stats_fisher_greater(hb, nb, hc, nc);
    if (hc == 0 || !(p <= cg_verdict_memory_alpha(lim)))
        return;
    char by[32], lim_text[32];
    cg_fmt_metric(m, most - med, by, sizeof(by));
    cg_fmt_metric(m, lim->max_regression_bytes, lim_text, sizeof(lim_text));
    r->outcome = CG_OUT_FAIL;
    r->grown_some = true;
    r->p_value = p;
    /* a note cut at its end still reads; the return value only says whether it was cut */
    (void)!snprintf(
        r->note, sizeof(r->note),
        "%zu of %zu current runs above the runs' median by more than +%.1f%% and %s (up "
        "to %s), against %zu of %zu baseline runs (p = %.2g): memory grew in some "
        "processes",
        hc, nc, lim->max_regression_pct, lim_text, by, hb, nb, p);
}

double cg_verdict_memory_alpha(const struct cg_metric_limits *lim)
{
    return isnan(lim->alpha) ? CG_MEMORY_GROWN_ALPHA : lim->alpha;
}

/* True when to is above from by more than both the percent and the bytes of the limit. */
static bool beyond_limit(double from, double to, const struct cg_metric_limits *lim)
{
    return (to / from - 1.0) * 100.0 > lim->max_regression_pct &&
           to - from > lim->max_regression_bytes;
}

/* The smallest and the largest of a side's runs. */
struct runs_range {
    double min, max;
};

static struct runs_range range_of(const double *v, size_t n)
{
    struct runs_range g = {v[0], v[0]};
    for (size_t i = 1; i < n; i++) {
        g.min = fmin(g.min, v[i]);
        g.max = fmax(g.max, v[i]);
    }
    return g;
}

/* The medians rose beyond the limit, and the runs of some side differ by more than the limit
 * while the sides overlap: memory differs between processes (a workspace or an allocator state
 * chosen per process), so either side's median may have fallen in either state. The rise FAILs
 * when the runs show it (one-sided Mann-Whitney at cg_verdict_memory_alpha); otherwise it is
 * INCONCLUSIVE, saying when so few runs cannot show it at all. The main command adds runs for
 * timing only (its looks are planned for those), so the note asks for runs of both sides. */
static enum cg_outcome overlapping_rise(const double *vb, size_t nb, const double *vc, size_t nc,
                                        struct runs_range b, struct runs_range c, enum cg_metric m,
                                        const struct cg_metric_limits *lim,
                                        struct cg_metric_result *r)
{
    struct cg_mwu u;
    if (cg_stats_mwu(vb, nb, vc, nc, &u) != 0)
        return CG_OUT_FAIL; /* out of memory: the medians decide, as they did */
    double alpha = cg_verdict_memory_alpha(lim);
    bool shown = u.p_greater <= alpha;
    char b0[32], b1[32], c0[32], c1[32], why[96] = "";
    cg_fmt_metric(m, b.min, b0, sizeof(b0));
    cg_fmt_metric(m, b.max, b1, sizeof(b1));
    cg_fmt_metric(m, c.min, c0, sizeof(c0));
    cg_fmt_metric(m, c.max, c1, sizeof(c1));
    double least_p = 1.0 / cg_stats_choose(nb + nc, nb); /* the exact test's, without ties */
    if (!shown && least_p > alpha)
        snprintf(why, sizeof(why), "%zu v %zu runs cannot show it (the test's smallest p is %.2g)",
                 nb, nc, least_p);
    else if (!shown)
        snprintf(why, sizeof(why), "the rise is not significant (p = %.2g > %.2g)", u.p_greater,
                 alpha);
    r->p_value = u.p_greater;
    r->wants_runs = false; /* not by the main command's looks: see above */
    if (shown)
        (void)!snprintf(r->note, sizeof(r->note),
                        "memory differs between processes (baseline runs %s to %s, current %s "
                        "to %s): the rise is significant (p = %.2g <= %.2g)",
                        b0, b1, c0, c1, u.p_greater, alpha);
    else
        (void)!snprintf(r->note, sizeof(r->note),
                        "memory differs between processes (baseline runs %s to %s, current %s "
                        "to %s): %s; more runs of both sides can settle it",
                        b0, b1, c0, c1, why);
    return shown ? CG_OUT_FAIL : CG_OUT_INCONCLUSIVE;
}

/* The medians fell beyond the limit, the sides' runs overlapping: an improvement only when the
 * runs show it, as overlapping_rise asks of a rise. */
static bool overlapping_fall(const double *vb, size_t nb, const double *vc, size_t nc,
                             const struct cg_metric_limits *lim)
{
    struct cg_mwu u;
    return cg_stats_mwu(vb, nb, vc, nc, &u) == 0 && u.p_less <= cg_verdict_memory_alpha(lim);
}

void cg_verdict_memory_metric(const struct cg_artifact *base, const struct cg_artifact *cur,
                              const struct cg_thresholds *t, enum cg_metric m, const double *vb,
                              const double *vc, struct cg_metric_result *r)
{
    size_t nb = base->n_runs, nc = cur->n_runs;
    const struct cg_metric_limits *lim = &t->metric[m];
    r->method = CG_METHOD_FIXED;
    r->baseline = cg_stats_quantile(vb, nb, 0.5);
    r->current = cg_stats_quantile(vc, nc, 0.5);
    struct runs_range b = range_of(vb, nb), c = range_of(vc, nc);
    r->delta_pct = (r->current / r->baseline - 1.0) * 100.0;
    r->ci_low_pct = (c.min / b.max - 1.0) * 100.0;
    r->ci_high_pct = (c.max / b.min - 1.0) * 100.0;
    r->regression_pct = r->delta_pct;
    double grown = r->current - r->baseline;
    bool up = r->delta_pct > lim->max_regression_pct && grown > lim->max_regression_bytes;
    bool down = -r->delta_pct > lim->max_regression_pct && -grown > lim->max_regression_bytes;
    /* each side's runs within the limit of each other: memory the same in every process, up to
     * noise, and the medians decide (one run a side is enough); else the runs must show it */
    bool alike = !beyond_limit(b.min, b.max, lim) && !beyond_limit(c.min, c.max, lim);
    r->outcome = CG_OUT_PASS;
    if (up)
        r->outcome = alike || beyond_limit(b.max, c.min, lim)
                         ? CG_OUT_FAIL
                         : overlapping_rise(vb, nb, vc, nc, b, c, m, lim, r);
    else if (down &&
             (alike || beyond_limit(c.max, b.min, lim) || overlapping_fall(vb, nb, vc, nc, lim)))
        r->outcome = CG_OUT_IMPROVED;
    if (r->outcome != CG_OUT_FAIL)
        grown_share(vb, nb, vc, nc, lim, m, r);
}
