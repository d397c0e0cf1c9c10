/*
 * cmd_report: the report step every verdict-giving command ends with (compare, the main
 * command through cmd_seq, ab): the terminal table on stdout (stderr when a document goes to
 * stdout), the markdown report and the JSON verdict written after everything rendered, and the
 * exit code.
 */
#include "cmd.h"

#include "fsutil.h"
#include "history.h"
#include "report.h"
#include "verdict.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cg_cmd_report_compare(const struct cg_artifact *base, const struct cg_artifact *cur,
                          const struct cg_thresholds *t, const struct cg_report_opts *o)
{
    struct cg_err err;
    struct cg_verdict v;
    cg_err_init(&err);
    if (cg_verdict_compute(base, cur, t, &v, &err) != 0)
        return cg_cmd_fail(&err);
    cg_verdict_explain_runs(&v, "more runs would settle it (compare takes one look; the main "
                                "command adds runs)");
    int exit_code = cg_cmd_report_verdict(&v, o);
    cg_verdict_release(&v);
    return exit_code;
}

int cg_cmd_load_history(const char *path, struct cg_history *h)
{
    struct cg_err err;
    cg_err_init(&err);
    if (cg_history_load(path, h, &err) != 0)
        return cg_cmd_fail(&err);
    cg_cmd_say_history_skipped(h);
    return 0;
}

void cg_cmd_say_history_skipped(const struct cg_history *h)
{
    for (size_t i = 0; i < h->n_warnings; i++)
        fprintf(stderr, "canary-gate: warning: %s\n", h->warnings[i]);
    if (h->skipped > h->n_warnings)
        fprintf(stderr, "canary-gate: warning: %zu more unreadable lines skipped\n",
                h->skipped - h->n_warnings);
}

int cg_cmd_report_verdict(const struct cg_verdict *verdict, const struct cg_report_opts *o)
{
    /* The reports mention a regression accepted on main lately. */
    struct cg_verdict with_accept = *verdict;
    const struct cg_verdict *v = &with_accept;
    if (o->history != NULL)
        with_accept.accepted =
            cg_history_recent_accept(o->history, o->gate_id, CG_HISTORY_ACCEPT_NOTE_RUNS,
                                     &with_accept.accepted_runs_since);
    struct cg_err err;
    struct cg_buf text, md;
    char *json = NULL;
    int exit_code = CG_EXIT_PASS;
    cg_err_init(&err);
    cg_buf_init(&text, 1 << 20);
    cg_buf_init(&md, CG_REPORT_MAX_BYTES + 1);

    /* Render everything before writing anything, so a failure leaves no partial set. */
    if (cg_report_terminal(v, o->color, &text, &err) != 0 ||
        (o->report_path != NULL && cg_report_markdown(v, o->gate_id, &md, &err) != 0)) {
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    if (o->json_path != NULL && (json = cg_report_json(v)) == NULL) {
        cg_err_set(&err, CG_ENOMEM, "cannot render the JSON verdict: out of memory");
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    /* The table never mixes with a report or verdict written to standard output. */
    FILE *table = cg_cmd_table_stream(o->report_path, o->json_path);
    fputs(cg_buf_str(&text), table);
    fflush(table);
    if ((o->report_path != NULL &&
         cg_file_write_atomic(o->report_path, md.data, md.len, &err) != 0) ||
        (o->json_path != NULL &&
         cg_file_write_atomic(o->json_path, json, strlen(json), &err) != 0)) {
        exit_code = cg_cmd_fail(&err);
        goto done;
    }
    exit_code = cg_cmd_exit_code(v->overall, o->fail_on_inconclusive);
done:
    free(json);
    cg_buf_release(&text);
    cg_buf_release(&md);
    return exit_code;
}

int cg_cmd_exit_code(enum cg_outcome overall, bool fail_on_inconclusive)
{
    if (overall == CG_OUT_FAIL)
        return CG_EXIT_FAIL;
    if (overall == CG_OUT_INCONCLUSIVE && fail_on_inconclusive)
        return CG_EXIT_INCONCLUSIVE;
    return CG_EXIT_PASS;
}
