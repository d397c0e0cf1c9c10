/*
 * bisect: the search of 'canary-gate bisect' (see bisect.h, docs/bisect.md).
 */
#include "bisect.h"

#include <math.h>
#include <stdlib.h>

enum side { SIDE_NONE, SIDE_LOW, SIDE_HIGH };

int cg_bisect_init(struct cg_bisect *b, size_t n, const struct cg_bisect_level *bad,
                   struct cg_err *err)
{
    b->n = 0;
    b->c = NULL;
    b->min_step_fraction = CG_BISECT_MIN_STEP_FRACTION;
    b->probes = 0;
    if (n < 2)
        return cg_err_set(err, CG_EINPUT, "a bisection needs the good and the bad commit");
    if ((b->c = calloc(n, sizeof(*b->c))) == NULL)
        return cg_err_set(err, CG_ENOMEM, "out of memory");
    b->n = n;
    for (size_t i = 0; i < n; i++)
        b->c[i].probe = -1;
    b->c[0].answer = CG_BISECT_LIKE_GOOD;
    b->c[0].measured = true;
    b->c[n - 1].answer = CG_BISECT_LIKE_BAD;
    b->c[n - 1].measured = true;
    b->c[n - 1].level = *bad;
    return 0;
}

void cg_bisect_release(struct cg_bisect *b)
{
    free(b->c);
    b->c = NULL;
    b->n = 0;
}

bool cg_bisect_ends_differ(const struct cg_bisect_level *bad)
{
    return bad->low > 0 && bad->change > 0;
}

static bool is_anchor(const struct cg_bisect *b, size_t i)
{
    return i == 0 || i == b->n - 1 || b->c[i].answer == CG_BISECT_BETWEEN;
}

static size_t count_anchors(const struct cg_bisect *b)
{
    size_t k = 0;
    for (size_t i = 0; i < b->n; i++)
        k += is_anchor(b, i);
    return k;
}

/* The anchors around commit i (not an anchor itself): *from below, *to above. */
static void segment_of(const struct cg_bisect *b, size_t i, size_t *from, size_t *to)
{
    size_t lo = i, hi = i;
    while (lo > 0 && !is_anchor(b, lo - 1))
        lo--;
    while (hi + 1 < b->n && !is_anchor(b, hi + 1))
        hi++;
    *from = lo - 1;
    *to = hi + 1;
}

/* True when level hi is significantly above level lo: the difference of the two changes is
 * beyond the root of the sum of the squares of their half-widths on the sides that face each
 * other. The two are measured against good in runs of their own (independent), so that is the
 * difference's own half-width at about their confidence; two intervals merely apart ask for more
 * (up to the sum of the half-widths), which missed a step whenever an end was measured in few
 * runs (bench/RESULTS.md). Exact levels (half-widths 0): any difference. */
static bool apart(const struct cg_bisect_level *lo, const struct cg_bisect_level *hi)
{
    double w = hypot(lo->high - lo->change, hi->change - hi->low);
    return hi->change - lo->change > w;
}

enum cg_bisect_answer cg_bisect_classify(const struct cg_bisect *b, size_t i,
                                         const struct cg_bisect_level *lv, bool final)
{
    size_t from, to;
    segment_of(b, i, &from, &to);
    const struct cg_bisect_level *L = &b->c[from].level, *H = &b->c[to].level;
    double mid = (L->change + H->change) / 2;
    double min_step = b->min_step_fraction * b->c[b->n - 1].level.change;
    /* clearly apart from an anchor, by a step: significantly (apart) and by at least min_step */
    bool up = apart(L, lv) && lv->change - L->change >= min_step;
    bool down = apart(lv, H) && H->change - lv->change >= min_step;
    bool like_bad = lv->change >= mid && lv->low > L->change;
    bool like_good = lv->change < mid && lv->high < H->change;
    /* Apart from both, or apart from one by a step and on the other's side of the middle only
     * by its point estimate (an end measured in few runs has a wide interval): a step of its
     * own, never "like" the anchor it is clearly apart from. */
    if ((up && down) || (up && like_good && H->change - lv->change >= min_step) ||
        (down && like_bad && lv->change - L->change >= min_step)) {
        if (!final)
            return CG_BISECT_UNRESOLVED;
        if (count_anchors(b) <= CG_BISECT_MAX_STEPS) /* room for one more segment */
            return CG_BISECT_BETWEEN;
    }
    if (like_bad)
        return CG_BISECT_LIKE_BAD;
    if (like_good)
        return CG_BISECT_LIKE_GOOD;
    return CG_BISECT_UNRESOLVED;
}

void cg_bisect_record(struct cg_bisect *b, size_t i, enum cg_bisect_answer answer,
                      const struct cg_bisect_level *lv)
{
    struct cg_bisect_commit *c = &b->c[i];
    segment_of(b, i, &c->seg_low, &c->seg_high);
    c->answer = answer;
    c->measured = lv != NULL;
    if (lv != NULL)
        c->level = *lv;
    c->probe = b->probes++;
}

/* Which level of the segment (from, to) commit i is like: its answer when it was given against
 * this segment, else the midpoint's side; none when it was not measured or unresolved. */
static enum side side_in(const struct cg_bisect *b, size_t i, size_t from, size_t to)
{
    const struct cg_bisect_commit *c = &b->c[i];
    if (i == from)
        return SIDE_LOW;
    if (i == to)
        return SIDE_HIGH;
    if (c->answer != CG_BISECT_LIKE_GOOD && c->answer != CG_BISECT_LIKE_BAD)
        return SIDE_NONE;
    if (c->seg_low == from && c->seg_high == to)
        return c->answer == CG_BISECT_LIKE_GOOD ? SIDE_LOW : SIDE_HIGH;
    double mid = (b->c[from].level.change + b->c[to].level.change) / 2;
    return c->level.change < mid ? SIDE_LOW : SIDE_HIGH;
}

/* The step of the segment (from, to). */
static void step_of(const struct cg_bisect *b, size_t from, size_t to, struct cg_bisect_step *s)
{
    s->from = from;
    s->to = to;
    s->first_high = to;
    for (size_t i = from + 1; i < to; i++) {
        if (side_in(b, i, from, to) == SIDE_HIGH) {
            s->first_high = i;
            break;
        }
    }
    s->last_low = from;
    for (size_t i = s->first_high; i-- > from + 1;) {
        if (side_in(b, i, from, to) == SIDE_LOW) {
            s->last_low = i;
            break;
        }
    }
    s->found = s->last_low + 1 == s->first_high;
    s->open = false;
    for (size_t i = s->last_low + 1; i < s->first_high; i++)
        s->open = s->open || b->c[i].answer == CG_BISECT_UNPROBED;
}

size_t cg_bisect_steps(const struct cg_bisect *b, struct cg_bisect_step *steps)
{
    size_t k = 0, from = 0;
    for (size_t i = 1; i < b->n && k < CG_BISECT_MAX_STEPS; i++) {
        if (!is_anchor(b, i))
            continue;
        step_of(b, from, i, &steps[k++]);
        from = i;
    }
    return k;
}

bool cg_bisect_next(const struct cg_bisect *b, size_t *next)
{
    struct cg_bisect_step steps[CG_BISECT_MAX_STEPS];
    size_t k = cg_bisect_steps(b, steps);
    for (size_t s = 0; s < k; s++) {
        if (!steps[s].open)
            continue;
        size_t lo = steps[s].last_low, hi = steps[s].first_high, mid = lo + (hi - lo) / 2;
        /* the unprobed commit nearest the middle, the earlier of two as near */
        for (size_t d = 0; d < hi - lo; d++) {
            if (mid >= d && mid - d > lo && b->c[mid - d].answer == CG_BISECT_UNPROBED) {
                *next = mid - d;
                return true;
            }
            if (mid + d < hi && mid + d > lo && b->c[mid + d].answer == CG_BISECT_UNPROBED) {
                *next = mid + d;
                return true;
            }
        }
    }
    return false;
}

void cg_bisect_step_size(const struct cg_bisect *b, const struct cg_bisect_step *s,
                         struct cg_bisect_level *out)
{
    const struct cg_bisect_level *lo = &b->c[s->last_low].level, *hi = &b->c[s->first_high].level;
    out->change = hi->change - lo->change;
    out->low = out->change - hypot(hi->change - hi->low, lo->high - lo->change);
    out->high = out->change + hypot(hi->high - hi->change, lo->change - lo->low);
}

const char *cg_bisect_answer_text(enum cg_bisect_answer a)
{
    switch (a) {
    case CG_BISECT_LIKE_GOOD:
        return "like good";
    case CG_BISECT_LIKE_BAD:
        return "like bad";
    case CG_BISECT_BETWEEN:
        return "between";
    case CG_BISECT_UNRESOLVED:
        return "unresolved";
    case CG_BISECT_SKIPPED:
        return "skipped";
    case CG_BISECT_UNPROBED:
        break;
    }
    return "not probed";
}

const char *cg_bisect_answer_name(enum cg_bisect_answer a)
{
    switch (a) {
    case CG_BISECT_LIKE_GOOD:
        return "like_good";
    case CG_BISECT_LIKE_BAD:
        return "like_bad";
    case CG_BISECT_BETWEEN:
        return "between";
    case CG_BISECT_UNRESOLVED:
        return "unresolved";
    case CG_BISECT_SKIPPED:
        return "skipped";
    case CG_BISECT_UNPROBED:
        break;
    }
    return "not_probed";
}
