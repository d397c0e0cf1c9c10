/*
 * diagnose: the diagnosis rules (see diagnose.h and docs/diagnosis.md).
 *
 * Each side (baseline, current) is first reduced to pooled figures: step wall time, GPU busy
 * time over the steps that carry it, per-kind op totals and peaks. Rules that need op names
 * join the two sides' ops by name or family into per-step sums (sorted, then merged). Every
 * per-step figure is a total over all runs divided by the side's measured steps. Times are
 * nanoseconds, sizes bytes.
 */
#include "diagnose_internal.h"

#include "straggler.h"

#include "fmt.h"
#include "stats.h"
#include "utf8.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const rule_names[CG_DIAG_RULE_COUNT] = {
    "host_bound",    "copy_share",    "pageable_copies",   "launch_bound",
    "kernel_choice", "memory_growth", "host_range_growth", "loss_divergence",
    "straggler",
};

static const char *const rule_titles[CG_DIAG_RULE_COUNT] = {
    "Host-bound",          "Copies' share of GPU time", "Copies from pageable memory",
    "Launch-bound",        "Changed kernel choice",     "Peak memory growth",
    "Host-side time grew", "Loss divergence",           "Straggler rank",
};

static const char ACT_HOST_BOUND[] =
    "The GPU waits for the host: look at data loading (more DataLoader workers, pin_memory, "
    "prefetching), Python overhead in the step, and host-device synchronisation (.item(), "
    ".cpu(), printing tensors).";
static const char ACT_COPY_SHARE[] =
    "Keep tensors on the device, batch small transfers, and overlap copies with compute "
    "(non_blocking copies from pinned memory, on a side stream).";
static const char ACT_PAGEABLE[] =
    "Copy from pinned (page-locked) host memory: pin_memory=True in the DataLoader or "
    "tensor.pin_memory(), then .to(device, non_blocking=True).";
static const char ACT_LAUNCH_BOUND[] =
    "Launch-bound: capture the step in a CUDA graph (torch.compile mode=\"reduce-overhead\", "
    "torch.cuda.graphs) or fuse small kernels (torch.compile, fused optimizers, foreach ops).";
static const char ACT_KERNEL_CHOICE[] =
    "A different kernel was chosen: check library versions (cuBLAS, cuDNN), dtypes, shapes and "
    "alignment, and autotuning or compilation settings.";
static const char ACT_DEVICE_MEMORY[] =
    "Compare memory snapshots of both revisions (torch.cuda.memory_summary(), "
    "torch.cuda.memory._record_memory_history); look for tensors kept alive across steps and "
    "larger activations (batch, sequence length, dtype).";
static const char ACT_HOST_MEMORY[] =
    "Compare host memory of both revisions (tracemalloc, memray); look for objects kept across "
    "steps, larger data loader buffers and CPU copies of tensors.";
static const char ACT_LOSS[] =
    "Training learns worse or diverges: check the change for numerics (dtype, loss scaling, "
    "learning rate and optimizer settings), initialisation and data order; a faster step that "
    "trains worse is no improvement.";
static const char ACT_STRAGGLER[] =
    "One rank holds every step back: look at its node (clocks, thermals, another job, a slower "
    "link or GPU), its data shard, and work only it does (logging, checkpointing on rank 0).";
static const char ACT_HOST_RANGE[] =
    "The host side slowed: profile this range on the CPU (py-spy, perf) for new "
    "synchronisation, Python work or data loading.";

const char *cg_diag_rule_name(enum cg_diag_rule r)
{
    return (unsigned)r < CG_DIAG_RULE_COUNT ? rule_names[r] : "unknown";
}

const char *cg_diag_rule_title(enum cg_diag_rule r)
{
    return (unsigned)r < CG_DIAG_RULE_COUNT ? rule_titles[r] : "Unknown";
}

const char *cg_diag_severity_name(enum cg_diag_severity s)
{
    return s == CG_DIAG_WARNING ? "warning" : "note";
}

/* ---- findings ---------------------------------------------------------------------------- */

struct ctx {
    const struct cg_diag_side *b; /* NULL without a baseline */
    const struct cg_diag_side *c;
    struct cg_diagnosis *d;
};

static struct cg_finding *add(struct ctx *x, enum cg_diag_rule rule, enum cg_diag_severity sev,
                              double cur, double base, const char *unit, const char *action)
{
    if (x->d->n >= CG_DIAG_MAX_FINDINGS) {
        x->d->n_dropped++;
        return NULL;
    }
    struct cg_finding *f = &x->d->items[x->d->n++];
    memset(f, 0, sizeof(*f));
    f->rule = rule;
    f->severity = sev;
    f->current = cur;
    f->baseline = base;
    f->unit = unit;
    f->action = action;
    return f;
}

static void say(struct cg_finding *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(struct cg_finding *f, const char *fmt, ...)
{
    if (f == NULL)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->finding, sizeof(f->finding), fmt, ap);
    va_end(ap);
}

/* Copies name into dst (CG_DIAG_SUBJECT_MAX + 4 bytes), cut at a character boundary with an
 * ellipsis when longer than CG_DIAG_SUBJECT_MAX bytes. */
static void cut_name(char *dst, const char *name)
{
    size_t len = strlen(name);
    if (len <= CG_DIAG_SUBJECT_MAX) {
        memcpy(dst, name, len + 1);
        return;
    }
    size_t cut = cg_utf8_cut(name, CG_DIAG_SUBJECT_MAX);
    memcpy(dst, name, cut);
    memcpy(dst + cut, "\xe2\x80\xa6", 4); /* U+2026 and the NUL */
}

static void fmt_delta_ns(double ns, char *dst, size_t n)
{
    if (n < 2)
        return;
    dst[0] = '+';
    cg_fmt_ns(ns, ns >= 0 ? dst + 1 : dst, ns >= 0 ? n - 1 : n);
}

/* " (baseline <v>)" when v is known, else "". */
static void fmt_baseline_pct(double v, char *dst, size_t n)
{
    if (isfinite(v))
        snprintf(dst, n, " (baseline %.1f%%)", v);
    else
        dst[0] = '\0';
}

/* The finding for a share (percent) above high on its own (a note) or grown by growth points
 * against the baseline's (a warning); NULL when neither, or when the list is full. */
static struct cg_finding *share_finding(struct ctx *x, enum cg_diag_rule rule, double cur,
                                        double base, double high, double growth, const char *action)
{
    bool grew = isfinite(base) && cur - base >= growth;
    if (!grew && !(cur > high))
        return NULL;
    return add(x, rule, grew ? CG_DIAG_WARNING : CG_DIAG_NOTE, cur, base, "pct", action);
}

static void rule_host_bound(struct ctx *x)
{
    double idle = cg_diag_idle_pct(x->c);
    double bidle = x->b != NULL ? cg_diag_idle_pct(x->b) : NAN;
    if (isnan(idle))
        return;
    struct cg_finding *f = share_finding(x, CG_DIAG_HOST_BOUND, idle, bidle, CG_DIAG_IDLE_HIGH_PCT,
                                         CG_DIAG_IDLE_GROWTH_PTS, ACT_HOST_BOUND);
    if (f == NULL)
        return;
    char busy[32], wall[32], base[48];
    cg_fmt_ns(x->c->busy_ns / x->c->n_busy, busy, sizeof(busy));
    cg_fmt_ns(x->c->busy_wall_ns / x->c->n_busy, wall, sizeof(wall));
    fmt_baseline_pct(bidle, base, sizeof(base));
    say(f, "GPU idle %.1f%% of step time%s: busy %s of %s per step", idle, base, busy, wall);
}

static void rule_copy_share(struct ctx *x)
{
    double gpu = cg_diag_gpu_op_ns(x->c);
    if (gpu <= 0)
        return;
    double share = 100.0 * x->c->kind_ns[CG_OP_MEMCPY] / gpu;
    double bgpu = x->b != NULL ? cg_diag_gpu_op_ns(x->b) : 0.0;
    /* NOLINTNEXTLINE(clang-analyzer-core.NullDereference): bgpu is 0 when x->b is NULL */
    double bshare = bgpu > 0 ? 100.0 * x->b->kind_ns[CG_OP_MEMCPY] / bgpu : NAN;
    struct cg_finding *f =
        share_finding(x, CG_DIAG_COPY_SHARE, share, bshare, CG_DIAG_COPY_HIGH_PCT,
                      CG_DIAG_COPY_GROWTH_PTS, ACT_COPY_SHARE);
    if (f == NULL)
        return;
    char copies[32], total[32], base[48];
    cg_fmt_ns(cg_diag_per_step(x->c, x->c->kind_ns[CG_OP_MEMCPY]), copies, sizeof(copies));
    cg_fmt_ns(cg_diag_per_step(x->c, gpu), total, sizeof(total));
    fmt_baseline_pct(bshare, base, sizeof(base));
    say(f, "copies take %.1f%% of GPU time%s: %s of %s per step in %.1f copies", share, base,
        copies, total, cg_diag_per_step(x->c, x->c->kind_calls[CG_OP_MEMCPY]));
}

/* True when the space-separated word w stands in s. */
static bool has_word(const char *s, const char *w)
{
    size_t n = strlen(w);
    for (const char *p = strstr(s, w); p != NULL; p = strstr(p + 1, w)) {
        bool start = p == s || p[-1] == ' ';
        bool end = p[n] == '\0' || p[n] == ' ';
        if (start && end)
            return true;
    }
    return false;
}

static int rule_pageable(struct ctx *x)
{
    const struct cg_diag_side *sides[2] = {x->b, x->c};
    struct cg_diag_op_sum *ops = NULL;
    size_t n = 0;
    if (cg_diag_join_ops(sides, 1u << CG_OP_MEMCPY, false, &ops, &n) != 0)
        return CG_ENOMEM;
    double ns[2] = {0, 0}, calls = 0;
    const struct cg_diag_op_sum *top = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!has_word(ops[i].key, "pageable"))
            continue;
        ns[0] += ops[i].ns[0];
        ns[1] += ops[i].ns[1];
        calls += ops[i].calls[1];
        if (ops[i].in[1] && (top == NULL || ops[i].ns[1] > top->ns[1]))
            top = &ops[i];
    }
    double wall = cg_diag_per_step(x->c, x->c->wall_ns);
    double share = 100.0 * ns[1] / wall;
    if (top != NULL && share >= CG_DIAG_PAGEABLE_MIN_STEP_PCT) {
        bool grew = x->b != NULL && ns[0] < ns[1] / 2.0;
        struct cg_finding *f =
            add(x, CG_DIAG_PAGEABLE_COPIES, grew ? CG_DIAG_WARNING : CG_DIAG_NOTE, ns[1],
                x->b != NULL ? ns[0] : NAN, "ns", ACT_PAGEABLE);
        char t[32], base[48] = "", name[CG_DIAG_SUBJECT_MAX + 4];
        cg_fmt_ns(ns[1], t, sizeof(t));
        if (x->b != NULL) {
            char bt[32];
            cg_fmt_ns(ns[0], bt, sizeof(bt));
            snprintf(base, sizeof(base), "; baseline %s", bt);
        }
        cut_name(name, top->key);
        if (f != NULL)
            memcpy(f->subject, name, sizeof(name));
        say(f,
            "copies from pageable host memory take %s per step (%.1f%% of step time%s) in "
            "%.1f calls, most in '%s'",
            t, share, base, calls, name);
    }
    free(ops);
    return 0;
}

static void rule_launch_bound(struct ctx *x)
{
    double calls = cg_diag_per_step(x->c, x->c->kind_calls[CG_OP_KERNEL]);
    if (!(calls >= CG_DIAG_TINY_MIN_CALLS))
        return;
    double mean = x->c->kind_ns[CG_OP_KERNEL] / x->c->kind_calls[CG_OP_KERNEL];
    if (!(mean < CG_DIAG_TINY_KERNEL_NS))
        return;
    bool known = x->b != NULL && x->b->a->gpu_available && x->b->kind_calls[CG_OP_KERNEL] > 0;
    double bcalls = known ? cg_diag_per_step(x->b, x->b->kind_calls[CG_OP_KERNEL]) : NAN;
    double bmean = known ? x->b->kind_ns[CG_OP_KERNEL] / x->b->kind_calls[CG_OP_KERNEL] : NAN;
    bool was = known && bcalls >= CG_DIAG_TINY_MIN_CALLS && bmean < CG_DIAG_TINY_KERNEL_NS;
    bool grew = known && (!was || calls >= bcalls * (1.0 + CG_DIAG_TINY_GROWTH_PCT / 100.0));
    struct cg_finding *f = add(x, CG_DIAG_LAUNCH_BOUND, grew ? CG_DIAG_WARNING : CG_DIAG_NOTE,
                               calls, bcalls, "calls", ACT_LAUNCH_BOUND);
    char m[32], base[80] = "";
    cg_fmt_ns(mean, m, sizeof(m));
    if (known) {
        char bm[32];
        cg_fmt_ns(bmean, bm, sizeof(bm));
        snprintf(base, sizeof(base), " (baseline %.0f averaging %s)", bcalls, bm);
    }
    say(f, "%.0f kernel launches per step averaging %s%s", calls, m, base);
}

static int cmp_family_share(const void *pa, const void *pb)
{
    const struct cg_finding *x = pa, *y = pb;
    double sx = fmax(x->current, x->baseline), sy = fmax(y->current, y->baseline);
    if (sx != sy)
        return sx < sy ? 1 : -1;
    return strcmp(x->subject, y->subject);
}

static int rule_kernel_choice(struct ctx *x)
{
    if (x->b == NULL || !x->b->a->gpu_available || !x->c->a->gpu_available)
        return 0;
    double total[2] = {cg_diag_per_step(x->b, x->b->kind_ns[CG_OP_KERNEL]),
                       cg_diag_per_step(x->c, x->c->kind_ns[CG_OP_KERNEL])};
    if (!(total[0] > 0) || !(total[1] > 0))
        return 0;
    const struct cg_diag_side *sides[2] = {x->b, x->c};
    struct cg_diag_op_sum *ops = NULL;
    size_t n = 0;
    if (cg_diag_join_ops(sides, 1u << CG_OP_KERNEL, true, &ops, &n) != 0)
        return CG_ENOMEM;
    /* Collect every candidate, then keep the largest CG_DIAG_FAMILY_MAX. */
    struct cg_finding cand[CG_DIAG_FAMILY_MAX + 1];
    size_t nc = 0;
    for (size_t i = 0; i < n; i++) {
        const struct cg_diag_op_sum *o = &ops[i];
        double bshare = 100.0 * o->ns[0] / total[0], cshare = 100.0 * o->ns[1] / total[1];
        bool is_new = !o->in[0] && o->in[1] && cshare >= CG_DIAG_FAMILY_MIN_SHARE_PCT;
        bool gone = o->in[0] && !o->in[1] && bshare >= CG_DIAG_FAMILY_MIN_SHARE_PCT;
        if (!is_new && !gone)
            continue;
        struct cg_finding *f = &cand[nc];
        memset(f, 0, sizeof(*f));
        f->current = cshare;
        f->baseline = bshare;
        cut_name(f->subject, o->key);
        char t[32];
        cg_fmt_ns(is_new ? o->ns[1] : o->ns[0], t, sizeof(t));
        if (is_new)
            say(f, "new kernel family '%s' takes %.1f%% of kernel time (%s per step)", f->subject,
                cshare, t);
        else
            say(f,
                "kernel family '%s' vanished; it took %.1f%% of the baseline's kernel time "
                "(%s per step)",
                f->subject, bshare, t);
        qsort(cand, ++nc, sizeof(*cand), cmp_family_share);
        if (nc > CG_DIAG_FAMILY_MAX)
            nc = CG_DIAG_FAMILY_MAX;
    }
    for (size_t i = 0; i < nc; i++) {
        struct cg_finding *f = add(x, CG_DIAG_KERNEL_CHOICE, CG_DIAG_WARNING, cand[i].current,
                                   cand[i].baseline, "pct", ACT_KERNEL_CHOICE);
        if (f != NULL) {
            memcpy(f->subject, cand[i].subject, sizeof(f->subject));
            memcpy(f->finding, cand[i].finding, sizeof(f->finding));
        }
    }
    free(ops);
    return 0;
}

/* Names the ops that grew most in time and in calls per step, into dst. */
static void grown_ops_text(const struct cg_diag_op_sum *ops, size_t n, char *dst, size_t len,
                           char *subject)
{
    const struct cg_diag_op_sum *t = NULL, *c = NULL;
    for (size_t i = 0; i < n; i++) {
        double dt = ops[i].ns[1] - ops[i].ns[0], dc = ops[i].calls[1] - ops[i].calls[0];
        if (dt > 0 && (t == NULL || dt > t->ns[1] - t->ns[0]))
            t = &ops[i];
        if (dc > 0 && (c == NULL || dc > c->calls[1] - c->calls[0]))
            c = &ops[i];
    }
    if (t == NULL && c == NULL) {
        snprintf(dst, len, "no op grew in time or calls per step");
        return;
    }
    char tn[CG_DIAG_SUBJECT_MAX + 4], cn[CG_DIAG_SUBJECT_MAX + 4], d[32];
    if (t == NULL) {
        cut_name(cn, c->key);
        memcpy(subject, cn, sizeof(cn));
        snprintf(dst, len, "the op that grew most in calls per step is '%s' (%+.1f)", cn,
                 c->calls[1] - c->calls[0]);
        return;
    }
    cut_name(tn, t->key);
    memcpy(subject, tn, sizeof(tn));
    fmt_delta_ns(t->ns[1] - t->ns[0], d, sizeof(d));
    if (c == NULL)
        snprintf(dst, len, "the op that grew most in time per step is '%s' (%s)", tn, d);
    else if (c == t)
        snprintf(dst, len, "the op that grew most is '%s' (%s and %+.1f calls per step)", tn, d,
                 c->calls[1] - c->calls[0]);
    else {
        cut_name(cn, c->key);
        snprintf(dst, len,
                 "the op that grew most in time per step is '%s' (%s), in calls '%s' "
                 "(%+.1f)",
                 tn, d, cn, c->calls[1] - c->calls[0]);
    }
}

static int rule_memory_growth(struct ctx *x)
{
    if (x->b == NULL)
        return 0;
    bool device = isfinite(x->b->peak_dev) && isfinite(x->c->peak_dev);
    double base = device ? x->b->peak_dev : x->b->peak_rss;
    double cur = device ? x->c->peak_dev : x->c->peak_rss;
    double lim_pct = device ? CG_DIAG_DEVICE_GROWTH_PCT : CG_DIAG_RSS_GROWTH_PCT;
    double lim_bytes = device ? CG_DIAG_DEVICE_GROWTH_BYTES : CG_DIAG_RSS_GROWTH_BYTES;
    if (!isfinite(base) || !isfinite(cur) || base <= 0)
        return 0;
    double grown = cur - base, pct = 100.0 * grown / base;
    if (!(pct >= lim_pct && grown >= lim_bytes))
        return 0;
    const struct cg_diag_side *sides[2] = {x->b, x->c};
    struct cg_diag_op_sum *ops = NULL;
    size_t n = 0;
    if (cg_diag_join_ops(sides, (1u << CG_OP_KIND_COUNT) - 1, false, &ops, &n) != 0)
        return CG_ENOMEM;
    struct cg_finding *f = add(x, CG_DIAG_MEMORY_GROWTH, CG_DIAG_WARNING, cur, base, "bytes",
                               device ? ACT_DEVICE_MEMORY : ACT_HOST_MEMORY);
    char b[32], c[32], g[32], ops_text[400], subject[CG_DIAG_SUBJECT_MAX + 4] = "";
    enum cg_metric m = device ? CG_M_PEAK_DEVICE_MEMORY : CG_M_PEAK_HOST_RSS;
    cg_fmt_metric(m, base, b, sizeof(b));
    cg_fmt_metric(m, cur, c, sizeof(c));
    cg_fmt_metric(m, grown, g, sizeof(g));
    grown_ops_text(ops, n, ops_text, sizeof(ops_text), subject);
    if (f != NULL)
        memcpy(f->subject, subject, sizeof(subject));
    say(f,
        "peak %s grew from %s to %s (%+.1f%%, +%s); the artifact has no per-op allocation "
        "data, and %s",
        device ? "device memory" : "host RSS", b, c, pct, g, ops_text);
    free(ops);
    return 0;
}

/* GPU time per step of a side for the host-range rule: busy time when both sides carry it,
 * else kernel time when both have kernels; NAN when neither. */
static void gpu_time_pair(const struct cg_diag_side *b, const struct cg_diag_side *c, double out[2],
                          const char **what)
{
    if (b->n_busy > 0 && c->n_busy > 0) {
        out[0] = b->busy_ns / b->n_busy;
        out[1] = c->busy_ns / c->n_busy;
        *what = "GPU busy time";
    } else if (b->kind_ns[CG_OP_KERNEL] > 0 && c->kind_ns[CG_OP_KERNEL] > 0) {
        out[0] = cg_diag_per_step(b, b->kind_ns[CG_OP_KERNEL]);
        out[1] = cg_diag_per_step(c, c->kind_ns[CG_OP_KERNEL]);
        *what = "kernel time";
    } else {
        out[0] = out[1] = NAN;
        *what = NULL;
    }
}

/* The least (lo) and the most (hi) time per step of range KEY over a side's runs with steps; a
 * run without it counts 0. */
static void range_run_span(const struct cg_diag_side *s, const char *key, double *lo, double *hi)
{
    *lo = INFINITY;
    *hi = -INFINITY;
    for (size_t r = 0; r < s->a->n_runs; r++) {
        const struct cg_run *run = &s->a->runs[r];
        if (run->n_steps == 0)
            continue;
        double ns = 0;
        for (size_t k = 0; k < run->n_ops; k++) {
            const struct cg_op *op = &run->ops[k];
            if (op->kind == CG_OP_RANGE && strcmp(op->name, key) == 0)
                ns += (double)op->total_ns;
        }
        ns /= (double)run->n_steps;
        *lo = fmin(*lo, ns);
        *hi = fmax(*hi, ns);
    }
}

/* Runs of a side that carry steps. */
static size_t runs_with_steps(const struct cg_diag_side *s)
{
    size_t n = 0;
    for (size_t r = 0; r < s->a->n_runs; r++)
        n += s->a->runs[r].n_steps > 0;
    return n;
}

/* A range grew when every current run spent more time per step in it than every baseline run,
 * by both limits: one process's state (its host speed, fixed for its life) moves every range
 * of it, so pooled means of a few runs a side differ by that alone; a range that grew in the
 * code grows in every process. */
static int rule_host_range(struct ctx *x)
{
    if (x->b == NULL || runs_with_steps(x->b) < CG_DIAG_RANGE_MIN_RUNS ||
        runs_with_steps(x->c) < CG_DIAG_RANGE_MIN_RUNS)
        return 0;
    double gpu[2];
    const char *what;
    gpu_time_pair(x->b, x->c, gpu, &what);
    /* Without GPU metrics on either side the host is all that was seen: say so and go on. */
    bool no_gpu = !x->b->a->gpu_available && !x->c->a->gpu_available;
    if (what == NULL && !no_gpu)
        return 0;
    double gpu_pct = what != NULL && gpu[0] > 0 ? 100.0 * (gpu[1] / gpu[0] - 1.0) : NAN;
    if (what != NULL && !(gpu_pct < CG_DIAG_GPU_FLAT_PCT))
        return 0;
    const struct cg_diag_side *sides[2] = {x->b, x->c};
    struct cg_diag_op_sum *ops = NULL;
    size_t n = 0;
    if (cg_diag_join_ops(sides, 1u << CG_OP_RANGE, false, &ops, &n) != 0)
        return CG_ENOMEM;
    const struct cg_diag_op_sum *top = NULL;
    double step = cg_diag_per_step(x->b, x->b->wall_ns), gap = 0.0;
    for (size_t i = 0; i < n; i++) {
        double b_lo, b_hi, c_lo, c_hi;
        range_run_span(x->b, ops[i].key, &b_lo, &b_hi);
        range_run_span(x->c, ops[i].key, &c_lo, &c_hi);
        double g = c_lo - b_hi;
        if (!(g > 0) || g < step * CG_DIAG_RANGE_GROWTH_STEP_PCT / 100.0 ||
            (ops[i].ns[0] > 0 && g < ops[i].ns[0] * CG_DIAG_RANGE_GROWTH_PCT / 100.0))
            continue;
        if (top == NULL || g > gap) {
            top = &ops[i];
            gap = g;
        }
    }
    if (top == NULL) {
        free(ops);
        return 0;
    }
    double grown = top->ns[1] - top->ns[0];
    struct cg_finding *f = add(x, CG_DIAG_HOST_RANGE_GROWTH, CG_DIAG_WARNING, top->ns[1],
                               top->ns[0], "ns", ACT_HOST_RANGE);
    char d[32], now[32], least[32], pct[48] = "", name[CG_DIAG_SUBJECT_MAX + 4];
    fmt_delta_ns(grown, d, sizeof(d));
    fmt_delta_ns(gap, least, sizeof(least));
    cg_fmt_ns(top->ns[1], now, sizeof(now));
    if (top->ns[0] > 0)
        snprintf(pct, sizeof(pct), "%+.1f%%, ", 100.0 * grown / top->ns[0]);
    cut_name(name, top->key);
    if (f != NULL)
        memcpy(f->subject, name, sizeof(name));
    char gpu_text[80] = "while GPU time was not measured on either side";
    if (what != NULL)
        snprintf(gpu_text, sizeof(gpu_text), "while %s per step changed %+.1f%%", what, gpu_pct);
    say(f, "host range '%s' grew %s per step (%sto %s; every run, by %s at least) %s", name, d,
        pct, now, least, gpu_text);
    free(ops);
    return 0;
}

/* ---- loss ------------------------------------------------------------------------------- */

struct loss_fig {
    double first, last; /* medians over runs of the first and last quarter's mean loss */
    bool known;
};

/* Mean loss of a run's first and last quarter of the steps that carry one; false with fewer
 * than CG_DIAG_LOSS_MIN_STEPS such steps. */
static bool run_loss(const struct cg_run *run, double *first, double *last)
{
    size_t m = 0;
    for (size_t i = 0; i < run->n_steps; i++)
        m += isfinite(run->steps[i].loss);
    if (m < CG_DIAG_LOSS_MIN_STEPS)
        return false;
    size_t q = m / 4, seen = 0;
    double head = 0.0, tail = 0.0;
    for (size_t i = 0; i < run->n_steps; i++) {
        double l = run->steps[i].loss;
        if (!isfinite(l))
            continue;
        if (seen < q)
            head += l;
        if (seen >= m - q)
            tail += l;
        seen++;
    }
    *first = head / (double)q;
    *last = tail / (double)q;
    return true;
}

static int loss_fig(const struct cg_artifact *a, struct loss_fig *out)
{
    out->known = false;
    out->first = out->last = NAN;
    double *v = malloc((a->n_runs ? a->n_runs : 1) * 2 * sizeof(*v));
    if (v == NULL)
        return CG_ENOMEM;
    size_t k = 0;
    for (size_t r = 0; r < a->n_runs; r++) {
        if (run_loss(&a->runs[r], &v[k], &v[a->n_runs + k]))
            k++;
    }
    if (k > 0) {
        out->first = cg_stats_quantile(v, k, 0.5);
        out->last = cg_stats_quantile(v + a->n_runs, k, 0.5);
        out->known = isfinite(out->first) && isfinite(out->last);
    }
    free(v);
    return k > 0 && !out->known ? CG_ENOMEM : 0;
}

/* Change of x against ref in percent of |ref|; NAN when ref is zero. */
static double rel_pct(double x, double ref)
{
    return ref != 0.0 ? 100.0 * (x - ref) / fabs(ref) : NAN;
}

static int rule_loss(struct ctx *x)
{
    struct loss_fig c, b = {NAN, NAN, false};
    if (loss_fig(x->c->a, &c) != 0 || (x->b != NULL && loss_fig(x->b->a, &b) != 0))
        return CG_ENOMEM;
    if (!c.known)
        return 0;
    double rise = rel_pct(c.last, c.first), brise = b.known ? rel_pct(b.last, b.first) : NAN;
    double above = b.known ? rel_pct(c.last, b.last) : NAN;
    bool rising =
        rise >= CG_DIAG_LOSS_RISE_PCT && (!b.known || !(rise - brise < CG_DIAG_LOSS_RISE_PCT));
    bool worse = above >= CG_DIAG_LOSS_FINAL_PCT;
    if (!rising && !worse)
        return 0;
    struct cg_finding *f = add(x, CG_DIAG_LOSS_DIVERGENCE, b.known ? CG_DIAG_WARNING : CG_DIAG_NOTE,
                               c.last, b.last, "loss", ACT_LOSS);
    char base[160] = "";
    if (b.known)
        snprintf(base, sizeof(base),
                 "; the baseline's went from %.4g to %.4g (%+.1f%%), so this run ends %+.1f%% "
                 "against it",
                 b.first, b.last, brise, above);
    say(f, "loss %s from %.4g to %.4g over the run (%+.1f%%, first and last quarter of steps)%s",
        rising ? "rose" : "went", c.first, c.last, rise, base);
    return 0;
}

/* A rank consistently the slowest of the current runs: a warning unless the baseline had the
 * same straggler. */
static int rule_straggler(struct ctx *x, const struct cg_artifact *baseline,
                          const struct cg_artifact *current)
{
    struct cg_straggler s, b;
    int rc = cg_straggler_find(current, &s);
    if (rc <= 0)
        return rc;
    int rb = baseline != NULL ? cg_straggler_find(baseline, &b) : 0;
    if (rb < 0)
        return rb;
    bool same = rb == 1 && b.rank == s.rank;
    struct cg_finding *f =
        add(x, CG_DIAG_STRAGGLER, baseline != NULL && !same ? CG_DIAG_WARNING : CG_DIAG_NOTE,
            s.over_median_pct, same ? b.over_median_pct : NAN, "pct", ACT_STRAGGLER);
    if (f != NULL)
        snprintf(f->subject, sizeof(f->subject), "%.*s", CG_DIAG_SUBJECT_MAX, s.node);
    say(f, "rank %lld on %s was the slowest in %lld of %lld steps, %+.0f%% over the median rank",
        (long long)s.rank, s.node, (long long)s.slowest_steps, (long long)s.steps,
        s.over_median_pct);
    return 0;
}

/* Warnings first; the rule order (the order findings were added) within a severity. */
static void order_findings(struct cg_diagnosis *d)
{
    for (size_t i = 1; i < d->n; i++) {
        struct cg_finding f = d->items[i];
        size_t j = i;
        while (j > 0 && d->items[j - 1].severity < f.severity) {
            d->items[j] = d->items[j - 1];
            j--;
        }
        d->items[j] = f;
    }
}

int cg_diagnose(const struct cg_artifact *baseline, const struct cg_artifact *current,
                struct cg_diagnosis *d)
{
    struct cg_diag_side b, c;
    d->n = 0;
    d->n_dropped = 0;
    if (cg_diag_side_make(&c, current) != 0 ||
        (baseline != NULL && cg_diag_side_make(&b, baseline) != 0))
        return CG_ENOMEM;
    struct ctx x = {baseline != NULL ? &b : NULL, &c, d};
    if (c.n_steps <= 0)
        return 0;
    rule_host_bound(&x);
    rule_copy_share(&x);
    int rc = rule_pageable(&x);
    rule_launch_bound(&x);
    if (rc == 0)
        rc = rule_kernel_choice(&x);
    if (rc == 0)
        rc = rule_memory_growth(&x);
    if (rc == 0)
        rc = rule_host_range(&x);
    if (rc == 0)
        rc = rule_loss(&x);
    if (rc == 0)
        rc = rule_straggler(&x, baseline, current);
    if (rc != 0) {
        d->n = d->n_dropped = 0;
        return rc;
    }
    order_findings(d);
    return 0;
}
