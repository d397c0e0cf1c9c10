/*
 * report_ranks: the per-rank table of the reports, for canaries whose runs are worlds of ranks
 * (runs[].ranks, docs/collector.md "Several nodes").
 *
 * One row per rank (by its rank number, either side's), its node, and per side the median over
 * its runs of: its median step time, its exposed communication per step (communication kernels
 * running while no compute kernel does) and its compute per step. An NCCL regression shows as
 * exposed communication grown on every rank with compute unchanged; a compute regression the
 * other way round; a straggler as one rank's compute. Units: ns; NAN where a side lacks it.
 */
#ifndef CG_REPORT_RANKS_H
#define CG_REPORT_RANKS_H

#include "artifact.h"
#include "buf.h"

#include <stddef.h>
#include <stdint.h>

#define CG_REPORT_RANK_ROWS 16 /* rows shown; the others are counted */

struct cg_rank_row {
    int64_t rank;
    const char *node; /* borrowed from an artifact */
    double step_ns[2], comm_ns[2], compute_ns[2]; /* [0] baseline, [1] current */
};

/* The rows of both sides' ranks, by rank number, into *rows (malloc'ed; NULL and 0 when no run
 * of either side has ranks). 0 or CG_ENOMEM. */
int cg_report_rank_rows(const struct cg_artifact *baseline, const struct cg_artifact *current,
                        struct cg_rank_row **rows, size_t *n);

/* The markdown section ("### Ranks" and its table; nothing without ranks). 0 or CG_ENOMEM. */
int cg_report_ranks_markdown(const struct cg_artifact *baseline,
                             const struct cg_artifact *current, struct cg_buf *out);

/* The terminal lines (nothing without ranks). 0 or CG_ENOMEM. */
int cg_report_ranks_term(const struct cg_artifact *baseline, const struct cg_artifact *current,
                         struct cg_buf *out);

#endif
