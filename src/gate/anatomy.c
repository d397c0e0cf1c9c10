/* anatomy: where a step's time goes, per side, and its gated parts (see anatomy.h). */
#include "anatomy.h"

#include "stats.h"
#include "ladder.h"
#include "straggler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *cg_anatomy_label(enum cg_anatomy_kind k)
{
    switch (k) {
    case CG_ANAT_GPU_BUSY:
        return "GPU busy (kernels)";
    case CG_ANAT_COMPUTE:
        return "GPU compute (kernels but communication)";
    case CG_ANAT_EXPOSED_COMM:
        return "communication not overlapped by compute";
    case CG_ANAT_COPIES:
        return "copies and sets (may overlap kernels)";
    case CG_ANAT_EXPOSED_COPIES:
        return "copies and sets while no kernel runs";
    case CG_ANAT_GPU_IDLE:
        return "GPU idle (waiting for the host)";
    case CG_ANAT_SYNC:
        return "host blocked in synchronisation";
    case CG_ANAT_RANK_SPREAD:
        return "slowest rank over the median rank";
    default:
        return "NVTX range";
    }
}

const char *cg_anatomy_kind_name(enum cg_anatomy_kind k)
{
    static const char *const names[] = {"gpu_busy", "compute",        "exposed_communication",
                                        "copies",   "exposed_copies", "gpu_idle",
                                        "sync",     "rank_spread",    "range"};
    return (unsigned)k <= CG_ANAT_RANGE ? names[k] : "range";
}

/* The step's copies while no kernel ran, -1 when unknown. */
static int64_t exposed_copies(const struct cg_step *s)
{
    return s->copy_ns >= 0 && s->copy_hidden_ns >= 0 && s->copy_hidden_ns <= s->copy_ns
               ? s->copy_ns - s->copy_hidden_ns
               : -1;
}

/* A step's time in kind (idle: the time the GPU was not idle, with the exposed copies when
 * copies; its busy time alone else), -1 when the step lacks it. */
static int64_t step_part(const struct cg_step *s, enum cg_anatomy_kind kind, bool copies)
{
    switch (kind) {
    case CG_ANAT_COMPUTE:
        return s->compute_ns;
    case CG_ANAT_EXPOSED_COMM:
        return s->compute_ns >= 0 && s->gpu_busy_ns >= s->compute_ns
                   ? s->gpu_busy_ns - s->compute_ns
                   : -1;
    case CG_ANAT_COPIES:
        return s->copy_ns;
    case CG_ANAT_EXPOSED_COPIES:
        return exposed_copies(s);
    case CG_ANAT_SYNC:
        return s->sync_ns;
    case CG_ANAT_GPU_IDLE: {
        int64_t exposed = copies ? exposed_copies(s) : 0;
        return s->gpu_busy_ns < 0 || exposed < 0 ? -1 : s->gpu_busy_ns + exposed;
    }
    default:
        return s->gpu_busy_ns;
    }
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* A run's rank spread (anatomy.h) over its summed step time; NAN without two ranks whose step
 * times cover the run's steps. */
static double rank_spread_share(const struct cg_run *r)
{
    if (r->n_ranks < 2 || r->n_steps == 0)
        return NAN;
    for (size_t k = 0; k < r->n_ranks; k++)
        if (r->ranks[k].n_steps < r->n_steps)
            return NAN;
    int64_t *t = malloc(r->n_ranks * sizeof(*t));
    if (t == NULL)
        return NAN;
    double wall = 0.0, spread = 0.0;
    size_t mid = cg_straggler_median_rank(r->n_ranks);
    for (size_t i = 0; i < r->n_steps; i++) {
        for (size_t k = 0; k < r->n_ranks; k++)
            t[k] = r->ranks[k].step_ns[i];
        qsort(t, r->n_ranks, sizeof(*t), cmp_i64);
        int64_t over = t[r->n_ranks - 1] - t[mid];
        spread += (double)over;
        wall += (double)r->steps[i].wall_ns;
    }
    free(t);
    return wall > 0.0 ? fmin(spread / wall, 1.0) : NAN;
}

/* A run's share of the step spent in kind (range: name; copies: see step_part), NAN when the run
 * lacks it. */
static double run_share(const struct cg_run *r, enum cg_anatomy_kind kind, const char *name,
                        bool copies)
{
    if (kind == CG_ANAT_RANK_SPREAD)
        return rank_spread_share(r);
    double wall = 0.0, part = 0.0;
    for (size_t i = 0; i < r->n_steps; i++) {
        const struct cg_step *s = &r->steps[i];
        wall += (double)s->wall_ns;
        if (kind == CG_ANAT_RANGE)
            continue;
        int64_t v = step_part(s, kind, copies);
        if (v < 0)
            return NAN;
        part += (double)(v < s->wall_ns ? v : s->wall_ns);
    }
    if (wall <= 0.0)
        return NAN;
    if (kind == CG_ANAT_RANGE) {
        bool seen = false;
        for (size_t i = 0; i < r->n_ops; i++)
            if (r->ops[i].kind == CG_OP_RANGE && name != NULL &&
                strcmp(r->ops[i].name, name) == 0) {
                part += (double)r->ops[i].total_ns;
                seen = true;
            }
        if (!seen)
            return 0.0;
    }
    double share = part / wall;
    return kind == CG_ANAT_GPU_IDLE ? 1.0 - share : share;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Every run's share of a into buf (sorted); false when some run lacks it or there is none. */
static bool side_shares(const struct cg_artifact *a, enum cg_anatomy_kind kind, const char *name,
                        bool copies, double *buf)
{
    for (size_t i = 0; i < a->n_runs; i++)
        if (isnan(buf[i] = run_share(&a->runs[i], kind, name, copies)))
            return false;
    if (a->n_runs == 0)
        return false;
    qsort(buf, a->n_runs, sizeof(*buf), cmp_double);
    return true;
}

/* Keeps name among the CG_ANATOMY_MAX_RANGES range names with the largest share (names, shares:
 * the kept ones, largest first). */
static void keep_range(const char **names, double *shares, size_t *n, const char *name,
                       double share)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp(names[i], name) == 0) {
            if (share <= shares[i])
                return;
            memmove(names + i, names + i + 1, (*n - i - 1) * sizeof(*names));
            memmove(shares + i, shares + i + 1, (*n - i - 1) * sizeof(*shares));
            (*n)--;
            break;
        }
    size_t at = *n;
    while (at > 0 && shares[at - 1] < share)
        at--;
    if (at >= CG_ANATOMY_MAX_RANGES)
        return;
    size_t move = (*n < CG_ANATOMY_MAX_RANGES ? *n : CG_ANATOMY_MAX_RANGES - 1) - at;
    memmove(names + at + 1, names + at, move * sizeof(*names));
    memmove(shares + at + 1, shares + at, move * sizeof(*shares));
    names[at] = name;
    shares[at] = share;
    if (*n < CG_ANATOMY_MAX_RANGES)
        (*n)++;
}

/* The larger of a part's two shares (a side without it counts as 0). */
static double larger_share(const struct cg_anatomy_part *p)
{
    double b = isnan(p->baseline) ? 0.0 : p->baseline, c = isnan(p->current) ? 0.0 : p->current;
    return b > c ? b : c;
}

static int cmp_part(const void *x, const void *y)
{
    double a = larger_share(x), b = larger_share(y);
    return (a < b) - (a > b); /* largest first */
}

/* Both sides, whether the idle share leaves out the exposed copies, and room for each side's
 * shares (one per run). */
/* Whether two CANARY_GATE_COMM_KERNELS values are the same (NULL and "" both unset). */
static bool same_names(const char *x, const char *y)
{
    return strcmp(x != NULL ? x : "", y != NULL ? y : "") == 0;
}

struct sides {
    const struct cg_artifact *base, *cur;
    bool copies, comm_differs;
    double *vb, *vc;
};

/* A part shown, not gated: both sides' medians (NAN for a side that lacks it); s->vb and s->vc
 * hold the sides' sorted shares after, in_b and in_c whether they have it. */
static struct cg_anatomy_part side_part(const struct sides *s, enum cg_anatomy_kind kind,
                                        const char *name, bool *in_b, bool *in_c)
{
    *in_b = side_shares(s->base, kind, name, s->copies, s->vb);
    *in_c = side_shares(s->cur, kind, name, s->copies, s->vc);
    return (struct cg_anatomy_part){kind,
                                    name,
                                    *in_b ? cg_stats_sorted_median(s->vb, s->base->n_runs) : NAN,
                                    *in_c ? cg_stats_sorted_median(s->vc, s->cur->n_runs) : NAN,
                                    CG_OUT_NOT_GATED,
                                    NAN,
                                    NAN,
                                    NAN,
                                    false};
}

/* Decides a gated part from both sides' sorted shares (anatomy.h). 0, or -1 (no memory). */
static int gate_part(struct cg_anatomy_part *p, const double *b, size_t nb, const double *c,
                     size_t nc, const struct cg_anatomy_limit *lim)
{
    struct cg_mwu u;
    struct cg_shift s;
    if (cg_stats_mwu_shift(b, nb, c, nc, lim->alpha, &u, &s) != 0)
        return -1;
    p->shift_points = s.estimate * 100.0;
    p->p_value = u.p_greater;
    p->threshold_points = lim->max_increase_points;
    if (nb < CG_TIMING_MIN_RUNS || nc < CG_TIMING_MIN_RUNS) {
        p->outcome = CG_OUT_INCONCLUSIVE; /* a share of the step is timing (verdict.h) */
        return 0;
    }
    struct cg_evidence e = {p->shift_points, u.p_greater, u.p_less,
                            (int64_t)nb >= lim->min_runs && (int64_t)nc >= lim->min_runs};
    struct cg_metric_limits ml = {lim->max_increase_points, NAN, lim->alpha, lim->min_runs};
    p->outcome = cg_ladder_outcome(cg_ladder_classify(&e, &ml));
    return 0;
}

/* The gated kinds and their limits. */
static const struct cg_anatomy_limit *part_limit(const struct cg_thresholds *t,
                                                 enum cg_anatomy_kind kind)
{
    const struct cg_anatomy_limit *lim = NULL;
    if (t != NULL && kind == CG_ANAT_GPU_IDLE)
        lim = &t->anatomy[CG_ANAT_GATE_GPU_IDLE];
    else if (t != NULL && kind == CG_ANAT_EXPOSED_COMM)
        lim = &t->anatomy[CG_ANAT_GATE_EXPOSED_COMM];
    else if (t != NULL && kind == CG_ANAT_RANK_SPREAD)
        lim = &t->anatomy[CG_ANAT_GATE_RANK_SPREAD];
    return lim != NULL && lim->set ? lim : NULL;
}

/* A part of a fixed kind: both sides' medians, decided when gated; keep: it is shown (some side
 * has it; exposed communication and copies: some run has some). */
static int fixed_part(const struct sides *s, const struct cg_thresholds *t,
                      enum cg_anatomy_kind kind, struct cg_anatomy_part *p, bool *keep)
{
    bool in_b, in_c;
    size_t nb = s->base->n_runs, nc = s->cur->n_runs;
    *p = side_part(s, kind, NULL, &in_b, &in_c);
    *keep = kind == CG_ANAT_EXPOSED_COMM || kind == CG_ANAT_EXPOSED_COPIES
                ? (in_b && s->vb[nb - 1] > 0.0) || (in_c && s->vc[nc - 1] > 0.0)
                : in_b || in_c;
    const struct cg_anatomy_limit *lim = part_limit(t, kind);
    if (lim == NULL || (kind == CG_ANAT_EXPOSED_COMM && s->comm_differs))
        return 0;
    if (!in_b || !in_c) {
        p->outcome = CG_OUT_UNAVAILABLE;
        return 0;
    }
    return gate_part(p, s->vb, nb, s->vc, nc, lim);
}

const struct cg_anatomy_part *cg_anatomy_part(const struct cg_anatomy *a, enum cg_anatomy_kind kind)
{
    for (size_t i = 0; i < a->n; i++)
        if (a->parts[i].kind == kind)
            return &a->parts[i];
    return NULL;
}

bool cg_anatomy_copies_as_idle(const struct cg_anatomy *a)
{
    return !a->copies_in_idle && cg_anatomy_part(a, CG_ANAT_COPIES) != NULL;
}

int cg_anatomy_compute(const struct cg_artifact *baseline, const struct cg_artifact *current,
                       const struct cg_thresholds *t, struct cg_anatomy *out)
{
    size_t nb = baseline->n_runs + 1, nc = current->n_runs + 1;
    struct sides s = {baseline,
                      current,
                      false,
                      !same_names(baseline->settings.comm_kernels, current->settings.comm_kernels),
                      malloc(nb * sizeof(double)),
                      malloc(nc * sizeof(double))};
    int rc = -1;
    if (s.vb == NULL || s.vc == NULL)
        goto done;
    out->n = 0;
    /* idle leaves out the copies no kernel overlapped where both sides measured them */
    s.copies = side_shares(baseline, CG_ANAT_EXPOSED_COPIES, NULL, false, s.vb) &&
               side_shares(current, CG_ANAT_EXPOSED_COPIES, NULL, false, s.vc);
    out->copies_in_idle = s.copies;
    out->comm_named_differently = s.comm_differs;
    struct cg_anatomy_part fixed[CG_ANATOMY_FIXED];
    bool keep[CG_ANATOMY_FIXED];
    for (int kind = 0; kind < CG_ANATOMY_FIXED; kind++)
        if (fixed_part(&s, t, (enum cg_anatomy_kind)kind, &fixed[kind], &keep[kind]) != 0)
            goto done;
    keep[CG_ANAT_COMPUTE] = keep[CG_ANAT_EXPOSED_COMM]; /* else it is the busy time */
    for (size_t k = 0; k < CG_ANATOMY_FIXED; k++)
        if (keep[k] || (fixed[k].outcome != CG_OUT_NOT_GATED && fixed[k].outcome != CG_OUT_PASS &&
                        fixed[k].outcome != CG_OUT_UNAVAILABLE))
            out->parts[out->n++] = fixed[k];
    const char *names[CG_ANATOMY_MAX_RANGES];
    double shares[CG_ANATOMY_MAX_RANGES];
    size_t n_names = 0;
    for (int side = 0; side < 2; side++) {
        const struct cg_artifact *a = side ? current : baseline;
        for (size_t i = 0; i < a->n_runs; i++) {
            double wall = 0.0;
            for (size_t k = 0; k < a->runs[i].n_steps; k++)
                wall += (double)a->runs[i].steps[k].wall_ns;
            for (size_t j = 0; j < a->runs[i].n_ops && wall > 0.0; j++) {
                const struct cg_op *op = &a->runs[i].ops[j];
                if (op->kind == CG_OP_RANGE) /* a run holds each range name once */
                    keep_range(names, shares, &n_names, op->name, (double)op->total_ns / wall);
            }
        }
    }
    for (size_t i = 0; i < n_names; i++) {
        bool in_b, in_c;
        out->parts[out->n++] = side_part(&s, CG_ANAT_RANGE, names[i], &in_b, &in_c);
    }
    /* chosen by their largest run, shown by their medians */
    qsort(out->parts + out->n - n_names, n_names, sizeof(*out->parts), cmp_part);
    rc = 0;
done:
    free(s.vb);
    free(s.vc);
    return rc;
}
