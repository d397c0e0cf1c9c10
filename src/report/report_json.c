/*
 * report_json: the JSON verdict for other tools (see report.h and docs/artifact.md; the
 * "diagnosis" array is documented in docs/diagnosis.md).
 */
#include "report.h"

#include "anatomy.h"
#include "jsonutil.h"
#include "signature.h"
#include "utf8.h"

#include "cg_version.h"

#include <cjson/cJSON.h>
#include "sequential.h"

#include <math.h>
#include <stdlib.h>

static const char *method_name(enum cg_method m)
{
    switch (m) {
    case CG_METHOD_RUNS: return "mann_whitney_runs";
    case CG_METHOD_BOOTSTRAP: return "block_bootstrap_steps";
    case CG_METHOD_FIXED: return "fixed_tolerance";
    case CG_METHOD_PAIRED: return "wilcoxon_signed_rank_pairs";
    case CG_METHOD_FAST_RUNS: return "mann_whitney_fast_runs";
    default: return "none";
    }
}

/* Sequential looks and the confirmation (null when the verdict had a single plain look). */
static cJSON *sequential(const struct cg_verdict *v)
{
    const struct cg_seq_info *i = v->seq;
    if (i == NULL)
        return cJSON_CreateNull();
    cJSON *s = cJSON_CreateObject();
    cJSON_AddStringToObject(s, "spending", cg_spend_name(i->spend));
    cJSON_AddBoolToObject(s, "paired", i->paired);
    cJSON_AddNumberToObject(s, "looks", (double)i->looks);
    cJSON_AddNumberToObject(s, "planned_looks", (double)i->planned_looks);
    cJSON_AddNumberToObject(s, "first_runs", (double)i->first_runs);
    cJSON_AddNumberToObject(s, "runs_added", (double)(i->current_runs - i->first_runs));
    cJSON_AddNumberToObject(s, "max_runs", (double)i->max_runs);
    cJSON_AddItemToObject(s, "alpha", cg_json_number(i->alpha[CG_M_STEP_TIME_MEAN]));
    cJSON_AddItemToObject(s, "look_alpha", cg_json_number(i->look_alpha[CG_M_STEP_TIME_MEAN]));
    cJSON_AddBoolToObject(s, "budget_stopped", i->budget_stopped);
    cJSON_AddItemToObject(s, "canary_seconds", cg_json_number(i->canary_s));
    cJSON *c = cJSON_AddObjectToObject(s, "confirmation");
    cJSON_AddStringToObject(c, "state", cg_confirm_name(i->confirm));
    cJSON_AddNumberToObject(c, "runs", (double)i->confirm_runs);
    cJSON_AddItemToObject(c, "canary_seconds", cg_json_number(i->confirm_s));
    cJSON *ms = cJSON_AddArrayToObject(c, "metrics");
    for (int m = 0; ms != NULL && m < CG_M_COUNT; m++) {
        const struct cg_seq_confirmation *x = &i->confirmation[m];
        if (i->confirm != CG_CONFIRM_CONFIRMED && i->confirm != CG_CONFIRM_REJECTED)
            break;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", cg_metric_name((enum cg_metric)m));
        cJSON_AddStringToObject(o, "outcome", cg_outcome_name(x->outcome));
        cJSON_AddItemToObject(o, "delta_pct", cg_json_number(x->delta_pct));
        cJSON_AddItemToObject(o, "ci_low_pct", cg_json_number(x->ci_low_pct));
        cJSON_AddItemToObject(o, "ci_high_pct", cg_json_number(x->ci_high_pct));
        cJSON_AddItemToObject(o, "p_value", cg_json_number(x->p_value));
        cJSON_AddItemToArray(ms, o);
    }
    return s;
}

static cJSON *side(const struct cg_artifact *a)
{
    cJSON *s = cJSON_CreateObject();
    cJSON_AddNumberToObject(s, "runs", (double)a->n_runs);
    cJSON_AddNumberToObject(s, "steps_per_run", a->n_runs ? (double)a->runs[0].n_steps : 0.0);
    cJSON_AddBoolToObject(s, "gpu_available", a->gpu_available);
    size_t stopped;
    int64_t steps;
    cg_report_stopped(a, &stopped, &steps);
    cJSON_AddNumberToObject(s, "stopped_runs", (double)stopped);
    cJSON_AddItemToObject(s, "stopped_after_steps",
                          steps > 0 ? cJSON_CreateNumber((double)steps) : cJSON_CreateNull());
    return s;
}

static cJSON *diagnosis(const struct cg_diagnosis *d)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; arr != NULL && i < d->n; i++) {
        const struct cg_finding *f = &d->items[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "rule", cg_diag_rule_name(f->rule));
        cJSON_AddStringToObject(o, "severity", cg_diag_severity_name(f->severity));
        cJSON_AddItemToObject(o, "subject",
                              f->subject[0] ? cJSON_CreateString(f->subject) : cJSON_CreateNull());
        cJSON_AddStringToObject(o, "finding", f->finding);
        cJSON_AddStringToObject(o, "action", f->action);
        cJSON_AddItemToObject(o, "current", cg_json_number(f->current));
        cJSON_AddItemToObject(o, "baseline", cg_json_number(f->baseline));
        cJSON_AddStringToObject(o, "unit", f->unit);
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

/* The slow process states' share (verdict.h, cg_states); null when the floor was not compared
 * over runs. */
static cJSON *name_list(const char *const *names, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a != NULL && i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(names[i]));
    return a;
}

/* "kernel_choices": the runs' kernel sets when they differ (signature.h), [] when every run ran
 * the same kernels or none; null when memory ran out. */
static cJSON *kernel_choices(const struct cg_verdict *v)
{
    struct cg_kernel_choices kc;
    if (cg_signature_kernels(v->baseline, v->current, v->states.tested && !v->states.own_states,
                             &kc) != 0)
        return cJSON_CreateNull();
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a != NULL && kc.n > 1 && i < kc.n; i++) {
        const struct cg_kernel_choice *ch = &kc.items[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "kernels", name_list(ch->only, ch->n_only));
        cJSON_AddItemToObject(o, "without", name_list(ch->without, ch->n_without));
        cJSON *runs = cJSON_AddObjectToObject(o, "runs");
        cJSON_AddNumberToObject(runs, "baseline", (double)ch->runs[0]);
        cJSON_AddNumberToObject(runs, "current", (double)ch->runs[1]);
        if (kc.states_known) {
            cJSON *fast = cJSON_AddObjectToObject(o, "fast_state_runs");
            cJSON_AddNumberToObject(fast, "baseline", (double)ch->fast[0]);
            cJSON_AddNumberToObject(fast, "current", (double)ch->fast[1]);
        } else {
            cJSON_AddNullToObject(o, "fast_state_runs");
        }
        cJSON_AddItemToArray(a, o);
    }
    cg_kernel_choices_release(&kc);
    return a;
}

static cJSON *process_states(const struct cg_verdict *v)
{
    const struct cg_states *s = &v->states;
    if (!s->tested)
        return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    cJSON *slow = cJSON_AddObjectToObject(o, "slow_runs");
    cJSON_AddNumberToObject(slow, "baseline", (double)s->slow[0]);
    cJSON_AddNumberToObject(slow, "current", (double)s->slow[1]);
    cJSON *runs = cJSON_AddObjectToObject(o, "runs");
    cJSON_AddNumberToObject(runs, "baseline", (double)s->runs[0]);
    cJSON_AddNumberToObject(runs, "current", (double)s->runs[1]);
    cJSON_AddItemToObject(o, "rise_points", cg_json_number(s->rise_points));
    cJSON_AddItemToObject(o, "p_value", cg_json_number(s->p_value));
    cJSON_AddItemToObject(o, "alpha", cg_json_number(s->alpha));
    cJSON_AddBoolToObject(o, "finding", s->finding);
    cJSON_AddBoolToObject(o, "own_states", s->own_states);
    cJSON_AddStringToObject(o, "outcome", cg_outcome_name(s->outcome));
    return o;
}

/* The phase-locked slowdown test (pattern.h); null when it was not made. */
static cJSON *step_pattern(const struct cg_pattern *p)
{
    if (!p->tested)
        return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "period", p->period);
    cJSON_AddNumberToObject(o, "step", p->phase + 1);
    cJSON_AddItemToObject(o, "excess_pct", cg_json_number(p->excess_pct));
    cJSON_AddItemToObject(o, "p_value", cg_json_number(p->p_value));
    cJSON_AddNumberToObject(o, "runs_slower", (double)p->runs_slower);
    cJSON_AddNumberToObject(o, "runs", (double)p->runs);
    return o;
}

/* "anatomy": each side's shares of the step and the gated parts' outcomes (anatomy.h). */
static cJSON *anatomy_json(const struct cg_verdict *v)
{
    const struct cg_anatomy *an = &v->anatomy;
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; i < an->n; i++) {
        const struct cg_anatomy_part *p = &an->parts[i];
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "part", cg_anatomy_kind_name(p->kind));
        if (p->name != NULL)
            cJSON_AddStringToObject(x, "name", p->name);
        if (p->kind == CG_ANAT_GPU_IDLE) /* copies measured on a side, but counted as idle */
            cJSON_AddBoolToObject(x, "copies_counted_as_idle", cg_anatomy_copies_as_idle(an));
        if (p->kind == CG_ANAT_EXPOSED_COMM) /* the sides named communication kernels otherwise */
            cJSON_AddBoolToObject(x, "communication_named_differently", an->comm_named_differently);
        cJSON_AddItemToObject(x, "baseline_share", cg_json_number(p->baseline));
        cJSON_AddItemToObject(x, "current_share", cg_json_number(p->current));
        cJSON_AddStringToObject(x, "outcome", cg_outcome_name(p->outcome));
        cJSON_AddItemToObject(x, "shift_points", cg_json_number(p->shift_points));
        cJSON_AddItemToObject(x, "p_value", cg_json_number(p->p_value));
        cJSON_AddItemToObject(x, "threshold_points", cg_json_number(p->threshold_points));
        cJSON_AddItemToArray(arr, x);
    }
    return arr;
}

/* "baseline_accepted": the regression accepted on main lately, or null. */
static cJSON *accepted_json(const struct cg_verdict *v)
{
    const struct cg_history_entry *a = v->accepted;
    if (a == NULL)
        return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "commit", a->commit);
    cJSON_AddStringToObject(o, "date", a->date);
    cJSON_AddItemToObject(o, "who", a->who ? cJSON_CreateString(a->who) : cJSON_CreateNull());
    cJSON_AddStringToObject(o, "reason", a->reason ? a->reason : "");
    cJSON_AddNumberToObject(o, "runs_since", (double)v->accepted_runs_since);
    return o;
}

/* "counts": the per-step count comparison, every row (docs/counts.md). */
static cJSON *counts_json(const struct cg_counts *c)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "compared", (double)c->n_compared);
    cJSON_AddNumberToObject(o, "changed", (double)c->n_changed);
    cJSON_AddNumberToObject(o, "failed", (double)c->n_fail);
    cJSON_AddNumberToObject(o, "improved", (double)c->n_improved);
    cJSON_AddNumberToObject(o, "varying", (double)c->n_varying);
    cJSON *rows = cJSON_AddArrayToObject(o, "rows");
    for (size_t i = 0; i < c->n; i++) {
        const struct cg_count_result *r = &c->rows[i];
        cJSON *x = cJSON_CreateObject();
        if (r->row >= 0)
            cJSON_AddStringToObject(x, "count", cg_count_name(r->row));
        else
            cJSON_AddStringToObject(x, "range", r->name);
        cJSON_AddItemToObject(x, "baseline", cg_json_number(r->baseline));
        cJSON_AddItemToObject(x, "current", cg_json_number(r->current));
        cJSON_AddItemToObject(x, "baseline_min", cg_json_number(r->base_lo));
        cJSON_AddItemToObject(x, "baseline_max", cg_json_number(r->base_hi));
        cJSON_AddItemToObject(x, "current_min", cg_json_number(r->cur_lo));
        cJSON_AddItemToObject(x, "current_max", cg_json_number(r->cur_hi));
        cJSON_AddItemToObject(x, "allowed_increase", cg_json_number(r->allowed));
        cJSON_AddBoolToObject(x, "varies", r->varies);
        cJSON_AddStringToObject(x, "outcome", cg_outcome_name(r->outcome));
        if (r->where != NULL) {
            cJSON *where = cJSON_AddArrayToObject(x, "where");
            for (size_t k = 0; where != NULL && k < r->n_where; k++) {
                const struct cg_count_where *w = &r->where[k];
                cJSON *y = cJSON_CreateObject();
                cJSON_AddStringToObject(y, "place",
                                        w->range == NULL ? "none"
                                        : w->after       ? "after"
                                                         : "in");
                cJSON_AddItemToObject(y, "range",
                                      w->range != NULL ? cJSON_CreateString(w->range)
                                                       : cJSON_CreateNull());
                cJSON_AddItemToObject(y, "baseline", cg_json_number(w->baseline));
                cJSON_AddItemToObject(y, "current", cg_json_number(w->current));
                cJSON_AddItemToArray(where, y);
            }
        }
        cJSON_AddItemToArray(rows, x);
    }
    return o;
}

/* The GPU rule's findings (gpu_rule.h): runs held back per side and why, clocks that moved,
 * settings that differ, and whether it made a FAIL inconclusive. */
static cJSON *gpu_check(const struct cg_gpu_check *g)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "held_baseline_runs", (double)g->held[0]);
    cJSON_AddNumberToObject(o, "held_current_runs", (double)g->held[1]);
    cJSON_AddItemToObject(o, "held_reason",
                          g->reason[0] ? cJSON_CreateString(g->reason) : cJSON_CreateNull());
    cJSON_AddBoolToObject(o, "clocks_moved", g->clocks_moved);
    cJSON_AddItemToObject(o, "clocks_reason", g->clocks_moved
                                                  ? cJSON_CreateString(g->clock_reason)
                                                  : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "settings_differ", g->settings_diff[0]
                                                    ? cJSON_CreateString(g->settings_diff)
                                                    : cJSON_CreateNull());
    cJSON_AddBoolToObject(o, "made_inconclusive", g->decided);
    return o;
}

/* The fields every JSON verdict opens with (docs/artifact.md): its schema, the tool's version,
 * the verdict word and the headline. NULL when out of memory. */
static cJSON *verdict_root(const char *verdict, const char *headline)
{
    cJSON *root = cJSON_CreateObject();
    if (root == NULL)
        return NULL;
    cJSON_AddStringToObject(root, "schema", "canary-gate/verdict");
    cJSON_AddNumberToObject(root, "schema_version", 1);
    cJSON_AddStringToObject(root, "tool_version", CG_VERSION);
    cJSON_AddStringToObject(root, "verdict", verdict);
    cJSON_AddStringToObject(root, "headline", headline);
    return root;
}

char *cg_report_json(const struct cg_verdict *v)
{
    char headline[512];
    cg_verdict_headline(v, headline, sizeof(headline));
    cJSON *root = verdict_root(cg_outcome_name(v->overall), headline);
    if (root == NULL)
        return NULL;
    cJSON_AddStringToObject(root, "thresholds", v->thresholds->source);
    cJSON_AddItemToObject(root, "baseline", side(v->baseline));
    cJSON_AddItemToObject(root, "current", side(v->current));
    cJSON_AddItemToObject(root, "machine_differs",
                          v->machine_diff ? cJSON_CreateString(v->machine_diff) : cJSON_CreateNull());
    if (v->shape[0][0] || v->shape[1][0]) { /* worlds of ranks: each side's node shape */
        cJSON *shape = cJSON_AddObjectToObject(root, "node_shape");
        if (shape != NULL) {
            cJSON_AddStringToObject(shape, "baseline", v->shape[0]);
            cJSON_AddStringToObject(shape, "current", v->shape[1]);
        }
    }
    cJSON_AddItemToObject(root, "canary_differs",
                          v->canary_diff ? cJSON_CreateString(v->canary_diff) : cJSON_CreateNull());
    struct cg_code_change code;
    cg_signature_code_change(v->baseline, v->current, &code);
    cJSON_AddItemToObject(root, "script_changed", name_list(code.files, code.n_files));
    cJSON_AddBoolToObject(root, "downgraded_for_machine", v->downgraded);
    cJSON_AddBoolToObject(root, "gpu_lost", v->gpu_lost);
    cJSON_AddBoolToObject(root, "weak_baseline", v->weak_baseline);
    cJSON_AddNumberToObject(root, "baseline_runs_needed", (double)v->baseline_runs_needed);
    cJSON_AddBoolToObject(root, "within_run_comparison", v->within_run);
    cJSON_AddItemToObject(root, "step_pattern", step_pattern(&v->pattern));
    cJSON_AddItemToObject(root, "sequential", sequential(v));
    cJSON_AddItemToObject(root, "baseline_accepted", accepted_json(v));
    cJSON *metrics = cJSON_AddArrayToObject(root, "metrics");
    for (int m = 0; m < CG_M_COUNT; m++) {
        const struct cg_metric_result *r = &v->metrics[m];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", cg_metric_name(r->metric));
        cJSON_AddItemToObject(o, "baseline", cg_json_number(r->baseline));
        cJSON_AddItemToObject(o, "current", cg_json_number(r->current));
        cJSON_AddItemToObject(o, "delta_pct", cg_json_number(r->delta_pct));
        cJSON_AddItemToObject(o, "ci_low_pct", cg_json_number(r->ci_low_pct));
        cJSON_AddItemToObject(o, "ci_high_pct", cg_json_number(r->ci_high_pct));
        cJSON_AddItemToObject(o, "p_value", cg_json_number(r->p_value));
        cJSON_AddItemToObject(o, "threshold_pct", cg_json_number(r->threshold_pct));
        cJSON_AddItemToObject(o, "threshold_bytes", cg_json_number(r->threshold_bytes));
        cJSON_AddStringToObject(o, "outcome", cg_outcome_name(r->outcome));
        cJSON_AddStringToObject(o, "method", method_name(r->method));
        cJSON_AddStringToObject(o, "note", r->note);
        if (r->method == CG_METHOD_FAST_RUNS) {
            cJSON *f = cJSON_AddObjectToObject(o, "fast_runs");
            cJSON_AddNumberToObject(f, "baseline", (double)r->fast_runs[0]);
            cJSON_AddNumberToObject(f, "current", (double)r->fast_runs[1]);
        }
        cJSON_AddItemToArray(metrics, o);
    }
    cJSON_AddItemToObject(root, "process_states", process_states(v));
    cJSON_AddItemToObject(root, "gpu_state", gpu_check(&v->gpu));
    cJSON_AddItemToObject(root, "kernel_choices", kernel_choices(v));
    cJSON *ops = cJSON_AddArrayToObject(root, "ops");
    for (size_t i = 0; i < v->n_ops; i++) {
        const struct cg_op_delta *d = &v->ops[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", d->name);
        cJSON_AddStringToObject(o, "family", d->family);
        cJSON_AddStringToObject(o, "kind", cg_op_kind_name(d->kind));
        cJSON_AddStringToObject(o, "status", d->status == CG_OPD_NEW        ? "new"
                                             : d->status == CG_OPD_VANISHED ? "vanished"
                                                                            : "both");
        cJSON_AddItemToObject(o, "baseline_ns_per_step", cg_json_number(d->base_ns));
        cJSON_AddItemToObject(o, "current_ns_per_step", cg_json_number(d->cur_ns));
        cJSON_AddItemToObject(o, "delta_ns_per_step", cg_json_number(d->delta_ns));
        cJSON_AddItemToObject(o, "delta_pct", cg_json_number(d->delta_pct));
        cJSON_AddItemToObject(o, "baseline_calls_per_step", cg_json_number(d->base_calls));
        cJSON_AddItemToObject(o, "current_calls_per_step", cg_json_number(d->cur_calls));
        cJSON_AddItemToObject(o, "p_value", cg_json_number(d->p_value));
        cJSON_AddItemToObject(o, "q_value", cg_json_number(d->q_value));
        cJSON_AddBoolToObject(o, "significant", d->significant);
        cJSON_AddItemToArray(ops, o);
    }
    cJSON *counts = cJSON_AddObjectToObject(root, "op_counts");
    cJSON_AddNumberToObject(counts, "compared", (double)v->n_ops_compared);
    cJSON_AddNumberToObject(counts, "listed", (double)v->n_ops);
    cJSON_AddNumberToObject(counts, "new", (double)v->n_ops_new);
    cJSON_AddNumberToObject(counts, "vanished", (double)v->n_ops_vanished);
    cJSON_AddNumberToObject(counts, "significant", (double)v->n_ops_significant);
    cJSON_AddItemToObject(root, "counts", counts_json(&v->counts));
    cJSON_AddItemToObject(root, "anatomy", anatomy_json(v));
    cJSON_AddItemToObject(root, "diagnosis", diagnosis(&v->diagnosis));
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    /* Names cut to a length (diagnosis subjects) or paths from the command line may be
     * ill-formed UTF-8: strict JSON readers must still read the verdict. */
    if (text != NULL && cg_utf8_fix(&text) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

char *cg_report_notice_json(const struct cg_notice *n)
{
    cJSON *root = verdict_root(n->kind == CG_NOTICE_CANARY_FAILED ? "error" : "pass", n->body);
    if (root == NULL)
        return NULL;
    if (n->recorded_baseline != NULL)
        cJSON_AddStringToObject(root, "recorded_baseline", n->recorded_baseline);
    char *s = cJSON_Print(root);
    cJSON_Delete(root);
    /* paths from the command line and the canary's failure may hold any bytes */
    if (s != NULL && cg_utf8_fix(&s) != 0) {
        free(s);
        return NULL;
    }
    return s;
}
