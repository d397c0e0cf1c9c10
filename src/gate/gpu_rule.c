/* gpu_rule: held-back runs, clocks that moved between the sides, and the rule that a FAIL they
 * decide is INCONCLUSIVE (see gpu_rule.h). */
#include "gpu_rule.h"

#include "stats.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CAUSE_OTHER CG_GPU_R_N /* another process on the GPU, after NVML's reasons */

static void clause(char *dst, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

bool cg_gpu_held_share(int64_t seen, int64_t samples)
{
    if (seen <= 0)
        return false;
    return samples <= 0 || (double)seen * 100.0 > CG_GPU_HELD_MIN_SHARE_PCT * (double)samples;
}

/* The share of a device's samples a cause was seen in, percent: 100 when the count of samples is
 * unknown (taken as seen throughout). */
static double share_pct(int64_t seen, int64_t samples)
{
    return samples > 0 ? (double)seen * 100.0 / (double)samples : 100.0;
}

/* c's constant cause (device, cause) (c NULL: none), NULL when it is none of them. */
static const struct cg_gpu_constant *constant(const struct cg_gpu_check *c, long long device,
                                              int cause)
{
    for (size_t i = 0; c != NULL && i < c->n_constant; i++)
        if (c->constant[i].device == device && c->constant[i].cause == cause)
            return &c->constant[i];
    return NULL;
}

/* Whether a cause seen in `share` percent of a device's samples is within c's constant one: no
 * more than CG_GPU_HELD_MIN_SHARE_PCT above the baseline's highest share of it. */
static bool within_constant(const struct cg_gpu_constant *k, double share)
{
    return k != NULL && share <= k->share_pct + CG_GPU_HELD_MIN_SHARE_PCT;
}

/* Calls fn for each (device, cause) that held run r back, once each, with its share of the
 * device's samples, but c's constant ones within their share. */
static void each_cause(const struct cg_gpu_check *c, const struct cg_run *r,
                       void (*fn)(void *, long long, int, double), void *ctx)
{
    const struct cg_gpu_state *g = &r->gpu;
    for (size_t i = 0; g->reason == NULL && i < g->n_dev; i++) {
        const struct cg_gpu_device *d = &g->dev[i];
        long long dev = (long long)d->index;
        for (int k = 0; k < CG_GPU_R_N; k++) {
            double share = share_pct(d->reasons[k], d->samples);
            if (cg_gpu_reason_external(k) && cg_gpu_held_share(d->reasons[k], d->samples) &&
                !within_constant(constant(c, dev, k), share))
                fn(ctx, dev, k, share);
        }
        double share = share_pct(d->other_samples, d->samples);
        if (cg_gpu_held_share(d->other_samples, d->samples) &&
            !within_constant(constant(c, dev, CAUSE_OTHER), share))
            fn(ctx, dev, CAUSE_OTHER, share);
    }
}

static const char *cause_label(int cause)
{
    return cause == CAUSE_OTHER ? "another process" : cg_gpu_reason_label(cause);
}

struct first {
    bool found;
    long long device;
    int cause;
};

static void take_first(void *ctx, long long device, int cause, double share)
{
    struct first *f = ctx;
    (void)share;
    if (!f->found)
        *f = (struct first){true, device, cause};
}

bool cg_gpu_run_held(const struct cg_gpu_check *g, const struct cg_run *r, const char **why,
                     long long *device)
{
    struct first f = {false, -1, 0};
    each_cause(g, r, take_first, &f);
    if (f.found) {
        *why = cause_label(f.cause);
        *device = f.device;
    }
    return f.found;
}

/* Runs per (device, cause) over one side, and the highest share of the samples it was seen in. */
#define MAX_TALLY CG_GPU_MAX_CONSTANT
struct tally {
    struct {
        long long device;
        int cause;
        size_t runs;
        double share_pct;
    } e[MAX_TALLY];
    size_t n;
};

static void count_cause(void *ctx, long long device, int cause, double share)
{
    struct tally *t = ctx;
    for (size_t i = 0; i < t->n; i++) {
        if (t->e[i].device == device && t->e[i].cause == cause) {
            t->e[i].runs++;
            t->e[i].share_pct = fmax(t->e[i].share_pct, share);
            return;
        }
    }
    if (t->n < MAX_TALLY) {
        t->e[t->n].device = device;
        t->e[t->n].cause = cause;
        t->e[t->n].share_pct = share;
        t->e[t->n++].runs = 1;
    }
}

/* Runs of side a per (device, cause) that held them back, but c's constant ones, into t. */
static void side_tally(const struct cg_gpu_check *c, const struct cg_artifact *a, struct tally *t)
{
    t->n = 0;
    for (size_t i = 0; i < a->n_runs; i++)
        each_cause(c, &a->runs[i], count_cause, t);
}

/* The causes that held back every run of both sides into g->constant, with the baseline's
 * highest share of each. */
static void find_constant(const struct cg_artifact *base, const struct cg_artifact *cur,
                          struct cg_gpu_check *g)
{
    struct tally tb, tc;
    side_tally(NULL, base, &tb);
    side_tally(NULL, cur, &tc);
    for (size_t i = 0; i < tc.n && base->n_runs > 0 && cur->n_runs > 0; i++) {
        if (tc.e[i].runs != cur->n_runs || g->n_constant == CG_GPU_MAX_CONSTANT)
            continue;
        for (size_t k = 0; k < tb.n; k++) {
            if (tb.e[k].device == tc.e[i].device && tb.e[k].cause == tc.e[i].cause &&
                tb.e[k].runs == base->n_runs) {
                g->constant[g->n_constant].device = tc.e[i].device;
                g->constant[g->n_constant].cause = tc.e[i].cause;
                g->constant[g->n_constant++].share_pct = tb.e[k].share_pct;
            }
        }
    }
}

/* The side's held runs, and its commonest cause as one clause into dst ("" when none held). */
static size_t side_clause(const struct cg_gpu_check *g, const struct cg_artifact *a,
                          const char *side, char *dst, size_t n)
{
    struct tally t = {.n = 0};
    size_t held = 0;
    dst[0] = '\0';
    for (size_t i = 0; i < a->n_runs; i++) {
        const char *why;
        long long dev;
        if (!cg_gpu_run_held(g, &a->runs[i], &why, &dev))
            continue;
        held++;
        each_cause(g, &a->runs[i], count_cause, &t);
    }
    if (held == 0 || t.n == 0)
        return held;
    size_t best = 0;
    for (size_t i = 1; i < t.n; i++)
        if (t.e[i].runs > t.e[best].runs)
            best = i;
    /* a constant cause holds a run back by its share above the baseline's: say so */
    const char *more = constant(g, t.e[best].device, t.e[best].cause) != NULL
                           ? " (more of their samples than in any baseline run)"
                           : "";
    if (t.e[best].cause == CAUSE_OTHER)
        snprintf(dst, n, "another process on GPU %lld during %zu of %zu %s runs%s",
                 t.e[best].device, t.e[best].runs, a->n_runs, side, more);
    else
        snprintf(dst, n, "GPU %lld throttled (%s) during %zu of %zu %s runs%s", t.e[best].device,
                 cg_gpu_reason_label(t.e[best].cause), t.e[best].runs, a->n_runs, side, more);
    return held;
}

/* A run's SM clock: the mean over its devices of their medians; NAN when unknown. */
static double run_sm_mhz(const struct cg_run *r)
{
    const struct cg_gpu_state *g = &r->gpu;
    double sum = 0.0;
    if (g->reason != NULL || g->n_dev == 0)
        return NAN;
    for (size_t i = 0; i < g->n_dev; i++) {
        if (g->dev[i].sm_median_mhz <= 0)
            return NAN;
        sum += (double)g->dev[i].sm_median_mhz;
    }
    return sum / (double)g->n_dev;
}

/* The median over a side's runs of their SM clock (NAN when a run lacks it), and the share of
 * its samples under the SW power cap (the workload's own draw) into *capped. */
static double side_sm_mhz(const struct cg_artifact *a, double *capped)
{
    double *v = malloc((a->n_runs + 1) * sizeof(*v)), med = NAN;
    double cap = 0.0, samples = 0.0;
    *capped = 0.0;
    if (v == NULL || a->n_runs == 0)
        goto done;
    for (size_t i = 0; i < a->n_runs; i++) {
        if (!isfinite(v[i] = run_sm_mhz(&a->runs[i])))
            goto done;
        for (size_t k = 0; k < a->runs[i].gpu.n_dev; k++) {
            const struct cg_gpu_device *d = &a->runs[i].gpu.dev[k];
            if (d->samples > 0 && d->reasons[CG_GPU_R_SW_POWER_CAP] >= 0) {
                cap += (double)d->reasons[CG_GPU_R_SW_POWER_CAP];
                samples += (double)d->samples;
            }
        }
    }
    med = cg_stats_quantile(v, a->n_runs, 0.5);
    *capped = samples > 0 ? cap / samples : 0.0;
done:
    free(v);
    return med;
}

static void clocks_assess(const struct cg_artifact *base, const struct cg_artifact *cur,
                          struct cg_gpu_check *g)
{
    const struct cg_gpu_env *eb = &base->env.gpu_env, *ec = &cur->env.gpu_env;
    if (eb->app_sm_mhz > 0 && ec->app_sm_mhz > 0 &&
        (eb->app_sm_mhz != ec->app_sm_mhz || eb->app_mem_mhz != ec->app_mem_mhz)) {
        g->clocks_moved = true;
        g->clocks_lower_here =
            ec->app_sm_mhz < eb->app_sm_mhz ||
            (eb->app_mem_mhz > 0 && ec->app_mem_mhz > 0 && ec->app_mem_mhz < eb->app_mem_mhz);
        snprintf(g->clock_reason, sizeof(g->clock_reason),
                 "the application clocks differ (SM %lld MHz on the baseline, %lld MHz here)",
                 (long long)eb->app_sm_mhz, (long long)ec->app_sm_mhz);
        return;
    }
    double cap_b, cap_c;
    double mb = side_sm_mhz(base, &cap_b), mc = side_sm_mhz(cur, &cap_c);
    if (!(mb > 0) || !(mc > 0))
        return;
    double moved = (mc / mb - 1.0) * 100.0;
    if (fabs(moved) <= CG_GPU_CLOCK_MOVED_PCT)
        return;
    /* the slower side held by its own power draw: the workload's doing, not the GPU's */
    if ((moved < 0 ? cap_c : cap_b) >= 0.5)
        return;
    g->clocks_moved = true;
    g->clocks_lower_here = moved < 0;
    snprintf(g->clock_reason, sizeof(g->clock_reason),
             "the SM clock's median moved from %.0f to %.0f MHz between the sides (%+.1f%%)", mb,
             mc, moved);
}

/* The constant causes that held back no run (those above the baseline's share are in the current
 * side's clause), by cause: "another process on GPUs 0, 1 and GPU 7 throttled (SW thermal
 * slowdown)" into dst; how many. */
static size_t constant_names(const struct cg_gpu_check *g, char *dst, size_t n)
{
    size_t named = 0;
    dst[0] = '\0';
    for (int j = 0; j <= CG_GPU_R_N; j++) {
        int cause = j == 0 ? CAUSE_OTHER : j - 1; /* another process first, then NVML's order */
        size_t devices = 0, len;
        for (size_t i = 0; i < g->n_constant; i++)
            devices += g->constant[i].cause == cause && g->constant[i].above == 0;
        if (devices == 0)
            continue;
        len = strlen(dst);
        snprintf(dst + len, n - len, "%s%s%s", named > 0 ? " and " : "",
                 cause == CAUSE_OTHER ? "another process on " : "", devices > 1 ? "GPUs " : "GPU ");
        for (size_t i = 0, k = 0; i < g->n_constant; i++) {
            if (g->constant[i].cause != cause || g->constant[i].above > 0)
                continue;
            len = strlen(dst);
            snprintf(dst + len, n - len, "%s%lld", k++ > 0 ? ", " : "", g->constant[i].device);
            named++;
        }
        len = strlen(dst);
        if (cause != CAUSE_OTHER)
            snprintf(dst + len, n - len, " throttled (%s)", cg_gpu_reason_label(cause));
    }
    return named;
}

/* The clause of reason that names the constant causes that held back no run; the first's name
 * and the others' count when the names do not fit. */
static void constant_clause(struct cg_gpu_check *g)
{
    static const char tail[] = " during every run of both sides (alike on both: no run held "
                               "back for ";
    char what[sizeof(g->reason)];
    size_t named = constant_names(g, what, sizeof(what));
    if (named == 0)
        return;
    size_t room = sizeof(g->reason) - strlen(g->reason);
    if (strlen(what) + sizeof(tail) + sizeof("them)") + 2 > room) {
        size_t i = 0;
        while (g->constant[i].above > 0) /* named > 0: one held back none */
            i++;
        const struct cg_gpu_constant *k = &g->constant[i];
        if (k->cause == CAUSE_OTHER)
            snprintf(what, sizeof(what), "another process on GPU %lld and %zu other cause%s",
                     k->device, named - 1, named > 2 ? "s" : "");
        else
            snprintf(what, sizeof(what), "GPU %lld throttled (%s) and %zu other cause%s", k->device,
                     cg_gpu_reason_label(k->cause), named - 1, named > 2 ? "s" : "");
    }
    clause(g->reason, sizeof(g->reason), "%s%s%s", what, tail, named > 1 ? "them)" : "it)");
}

void cg_gpu_check_assess(const struct cg_artifact *base, const struct cg_artifact *cur,
                         struct cg_gpu_check *g)
{
    memset(g, 0, sizeof(*g));
    find_constant(base, cur, g);
    g->held[1] = side_clause(g, cur, "current", g->side_reason[1], sizeof(g->side_reason[1]));
    g->held[0] = side_clause(g, base, "baseline", g->side_reason[0], sizeof(g->side_reason[0]));
    snprintf(g->reason, sizeof(g->reason), "%s%s%s", g->side_reason[1],
             g->side_reason[1][0] && g->side_reason[0][0] ? "; " : "", g->side_reason[0]);
    struct tally above;
    side_tally(g, cur, &above);
    for (size_t i = 0; i < g->n_constant; i++)
        for (size_t k = 0; k < above.n; k++)
            if (above.e[k].device == g->constant[i].device &&
                above.e[k].cause == g->constant[i].cause)
                g->constant[i].above = above.e[k].runs;
    constant_clause(g);
    clocks_assess(base, cur, g);
    cg_gpu_settings_diff(&base->env.gpu_env, &cur->env.gpu_env, g->settings_diff,
                         sizeof(g->settings_diff));
}

/* Appends one clause to dst, "; " between clauses. */
static void clause(char *dst, size_t n, const char *fmt, ...)
{
    size_t len = strlen(dst);
    if (len + 2 >= n)
        return;
    if (len > 0) {
        memcpy(dst + len, "; ", 3);
        len += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst + len, n - len, fmt, ap);
    va_end(ap);
}

static const char *on_off(int v, const char *on, const char *off)
{
    return v == 1 ? on : off;
}

void cg_gpu_settings_diff(const struct cg_gpu_env *b, const struct cg_gpu_env *c, char *dst,
                          size_t n)
{
    dst[0] = '\0';
    if (!b->recorded || !c->recorded || b->reason != NULL || c->reason != NULL)
        return;
    if (b->clocks_locked >= 0 && c->clocks_locked >= 0 && b->clocks_locked != c->clocks_locked)
        clause(dst, n, "clocks %s on the baseline, %s here",
               on_off(b->clocks_locked, "locked", "not locked"),
               on_off(c->clocks_locked, "locked", "not locked"));
    if (isfinite(b->power_limit_w) && isfinite(c->power_limit_w) &&
        fabs(b->power_limit_w - c->power_limit_w) >= 0.5)
        clause(dst, n, "power limit %.0f W on the baseline, %.0f W here", b->power_limit_w,
               c->power_limit_w);
    if (b->persistence_mode >= 0 && c->persistence_mode >= 0 &&
        b->persistence_mode != c->persistence_mode)
        clause(dst, n, "persistence mode %s on the baseline, %s here",
               on_off(b->persistence_mode, "on", "off"), on_off(c->persistence_mode, "on", "off"));
}

void cg_gpu_env_text(const struct cg_gpu_env *e, char *dst, size_t n)
{
    if (!e->recorded) {
        snprintf(dst, n, "not recorded");
        return;
    }
    if (e->reason != NULL) {
        snprintf(dst, n, "%s", e->reason);
        return;
    }
    char clocks[96], power[48];
    if (e->clocks_locked == 1)
        snprintf(clocks, sizeof(clocks), "clocks locked at %lld MHz SM, %lld MHz memory",
                 (long long)e->app_sm_mhz, (long long)e->app_mem_mhz);
    else
        snprintf(clocks, sizeof(clocks), "clocks %s",
                 e->clocks_locked == 0 ? "not locked" : "locked: unknown");
    if (isfinite(e->power_limit_w))
        snprintf(power, sizeof(power), "power limit %.0f W", e->power_limit_w);
    else
        snprintf(power, sizeof(power), "power limit unknown");
    snprintf(dst, n, "%s, %s, persistence mode %s", clocks, power,
             e->persistence_mode == 1   ? "on"
             : e->persistence_mode == 0 ? "off"
                                        : "unknown");
}
