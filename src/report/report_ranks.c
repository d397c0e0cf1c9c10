/* report_ranks: the per-rank table of the reports (see report_ranks.h). */
#include "report_ranks.h"

#include "err.h"
#include "fmt.h"
#include "stats.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_rank(const void *x, const void *y)
{
    const struct cg_rank_row *a = x, *b = y;
    return (a->rank > b->rank) - (a->rank < b->rank);
}

/* The row of rank r (made, NAN-filled, when new). */
static struct cg_rank_row *row_of(struct cg_rank_row *rows, size_t *n, int64_t r,
                                  const char *node)
{
    for (size_t i = 0; i < *n; i++)
        if (rows[i].rank == r)
            return &rows[i];
    rows[*n] = (struct cg_rank_row){r, node, {NAN, NAN}, {NAN, NAN}, {NAN, NAN}};
    return &rows[(*n)++];
}

/* Median over a side's runs of one figure of rank r; NAN when no run has it. what: 0 step
 * median, 1 exposed communication per step, 2 compute per step. */
static double side_median(const struct cg_artifact *a, int64_t r, int what, double *buf)
{
    size_t k = 0;
    for (size_t i = 0; i < a->n_runs; i++) {
        const struct cg_run *run = &a->runs[i];
        for (size_t j = 0; j < run->n_ranks; j++) {
            const struct cg_rank *x = &run->ranks[j];
            if (x->rank != r || x->n_steps == 0)
                continue;
            int64_t total = what == 1 ? x->comm_exposed_ns : x->compute_ns;
            double v = what == 0  ? cg_rank_step_median_ns(x)
                       : total < 0 ? NAN
                                   : (double)total / (double)x->n_steps;
            if (!isnan(v))
                buf[k++] = v;
            break;
        }
    }
    return k > 0 ? cg_stats_quantile(buf, k, 0.5) : NAN;
}

int cg_report_rank_rows(const struct cg_artifact *baseline, const struct cg_artifact *current,
                        struct cg_rank_row **rows, size_t *n)
{
    *rows = NULL;
    *n = 0;
    const struct cg_artifact *sides[2] = {baseline, current};
    size_t cap = 0, most_runs = 1;
    for (int s = 0; s < 2; s++)
        for (size_t i = 0; sides[s] != NULL && i < sides[s]->n_runs; i++) {
            cap += sides[s]->runs[i].n_ranks;
            most_runs = sides[s]->n_runs > most_runs ? sides[s]->n_runs : most_runs;
        }
    if (cap == 0)
        return 0;
    struct cg_rank_row *out = malloc(cap * sizeof(*out));
    double *buf = malloc(most_runs * sizeof(*buf));
    if (out == NULL || buf == NULL) {
        free(out);
        free(buf);
        return CG_ENOMEM;
    }
    size_t k = 0;
    for (int s = 1; s >= 0; s--) /* the current side's node names first */
        for (size_t i = 0; sides[s] != NULL && i < sides[s]->n_runs; i++)
            for (size_t j = 0; j < sides[s]->runs[i].n_ranks; j++)
                row_of(out, &k, sides[s]->runs[i].ranks[j].rank, sides[s]->runs[i].ranks[j].node);
    for (size_t i = 0; i < k; i++)
        for (int s = 0; s < 2; s++) {
            if (sides[s] == NULL)
                continue;
            out[i].step_ns[s] = side_median(sides[s], out[i].rank, 0, buf);
            out[i].comm_ns[s] = side_median(sides[s], out[i].rank, 1, buf);
            out[i].compute_ns[s] = side_median(sides[s], out[i].rank, 2, buf);
        }
    free(buf);
    qsort(out, k, sizeof(*out), cmp_rank);
    *rows = out;
    *n = k;
    return 0;
}

/* "b -> c (+x%)", "c" without a baseline figure, "-" without either, into t. */
static void pair_text(const double v[2], const char *arrow, char *t, size_t cap)
{
    char b[32], c[32];
    if (isnan(v[1]) && isnan(v[0])) {
        snprintf(t, cap, "-");
        return;
    }
    cg_fmt_ns(v[1], c, sizeof(c));
    if (isnan(v[0])) {
        snprintf(t, cap, "%s", isnan(v[1]) ? "-" : c);
        return;
    }
    cg_fmt_ns(v[0], b, sizeof(b));
    if (isnan(v[1]))
        snprintf(t, cap, "%s %s -", b, arrow);
    else if (v[0] > 0)
        snprintf(t, cap, "%s %s %s (%+.1f%%)", b, arrow, c, 100.0 * (v[1] / v[0] - 1.0));
    else
        snprintf(t, cap, "%s %s %s", b, arrow, c);
}

/* The section in markdown (md) or for the terminal. */
static int ranks_text(const struct cg_artifact *baseline, const struct cg_artifact *current,
                      bool md, struct cg_buf *out)
{
    struct cg_rank_row *rows;
    size_t n;
    if (cg_report_rank_rows(baseline, current, &rows, &n) != 0)
        return CG_ENOMEM;
    if (n == 0)
        return 0;
    int rc = cg_buf_adds(out, md ? "\n### Ranks\n\nPer rank, the median over runs of its median "
                                   "step, of its communication no compute overlapped per step, "
                                   "and of its compute per step (baseline &rarr; current): "
                                   "communication grown on every rank with compute unchanged "
                                   "points to the collectives, compute grown to the work, one "
                                   "rank's to a straggler.\n\n"
                                   "| Rank | Node | Step | Exposed communication | Compute |\n"
                                   "|---:|---|---:|---:|---:|\n"
                                 : "\nranks (median over runs, baseline -> current): step; "
                                   "exposed communication per step; compute per step\n");
    const char *arrow = md ? "&rarr;" : "->";
    for (size_t i = 0; i < n && i < CG_REPORT_RANK_ROWS && rc == 0; i++) {
        char step[96], comm[96], comp[96];
        const char *node = rows[i].node != NULL ? rows[i].node : "";
        pair_text(rows[i].step_ns, arrow, step, sizeof(step));
        pair_text(rows[i].comm_ns, arrow, comm, sizeof(comm));
        pair_text(rows[i].compute_ns, arrow, comp, sizeof(comp));
        rc |= cg_buf_printf(out, md ? "| %lld | " : "  rank %lld on ", (long long)rows[i].rank);
        rc |= md ? cg_md_escape(out, node, 64) : cg_term_escape(out, node, 64);
        rc |= cg_buf_printf(out, md ? " | %s | %s | %s |\n" : ": %s; %s; %s\n", step, comm, comp);
    }
    if (n > CG_REPORT_RANK_ROWS && rc == 0)
        rc |= cg_buf_printf(out, md ? "\n%zu more ranks in the artifacts (`runs[].ranks`).\n"
                                    : "  %zu more ranks in the artifacts\n",
                            n - CG_REPORT_RANK_ROWS);
    free(rows);
    return rc;
}

int cg_report_ranks_markdown(const struct cg_artifact *baseline,
                             const struct cg_artifact *current, struct cg_buf *out)
{
    return ranks_text(baseline, current, true, out);
}

int cg_report_ranks_term(const struct cg_artifact *baseline, const struct cg_artifact *current,
                         struct cg_buf *out)
{
    return ranks_text(baseline, current, false, out);
}
