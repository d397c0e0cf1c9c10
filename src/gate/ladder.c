/*
 * ladder: the decision ladder of a timing comparison and the rule that holds a FAIL back
 * (ladder.h).
 */
#include "ladder.h"

enum cg_rung cg_ladder_classify(const struct cg_evidence *e, const struct cg_metric_limits *lim)
{
    if (e->regression_pct > lim->max_regression_pct) {
        if (!e->enough_runs)
            return CG_RUNG_TOO_FEW_RUNS;
        return e->p_worse <= lim->alpha ? CG_RUNG_FAIL : CG_RUNG_NOT_SIGNIFICANT;
    }
    if (-e->regression_pct > lim->max_regression_pct && e->p_better <= lim->alpha)
        return CG_RUNG_IMPROVED;
    return CG_RUNG_PASS;
}

enum cg_outcome cg_ladder_outcome(enum cg_rung rung)
{
    switch (rung) {
    case CG_RUNG_IMPROVED:
        return CG_OUT_IMPROVED;
    case CG_RUNG_FAIL:
        return CG_OUT_FAIL;
    case CG_RUNG_TOO_FEW_RUNS:
    case CG_RUNG_NOT_SIGNIFICANT:
        return CG_OUT_INCONCLUSIVE;
    case CG_RUNG_PASS:
        break;
    }
    return CG_OUT_PASS;
}

bool cg_ladder_hold_back(enum cg_outcome *o)
{
    if (*o != CG_OUT_FAIL)
        return false;
    *o = CG_OUT_INCONCLUSIVE;
    return true;
}
