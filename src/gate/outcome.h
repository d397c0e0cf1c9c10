/*
 * outcome: what the gate says of one metric or count, and of the whole comparison.
 */
#ifndef CG_OUTCOME_H
#define CG_OUTCOME_H

enum cg_outcome {
    CG_OUT_PASS,
    CG_OUT_IMPROVED, /* better beyond the threshold (significantly, for timing): shown,
                      * never failed */
    CG_OUT_FAIL,
    CG_OUT_INCONCLUSIVE,
    CG_OUT_NOT_GATED,  /* measured and shown, but another metric gates this concern */
    CG_OUT_UNAVAILABLE /* not measured on one side or both */
};

#endif
