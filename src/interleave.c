/*
 * interleave: A B B A runs of two collectors, the pooled order, and the measuring options of
 * every measuring command (see interleave.h).
 */
#include "interleave.h"

#include "redact.h"

#include "cmd.h"

#include <stdint.h>
#include <string.h>

int cg_interleave_run(struct cg_collector *ca, struct cg_artifact *a, struct cg_collector *cb,
                      struct cg_artifact *b, long n, struct cg_err *err)
{
    size_t start = a->n_runs; /* a batch added to earlier pairs keeps the A B B A order */
    for (long k = 0; k < n; k++) {
        bool a_first = (start + (size_t)k) % 2 == 0;
        int rc = cg_collector_run(a_first ? ca : cb, a_first ? a : b, 1, n, err);
        if (rc == 0)
            rc = cg_collector_run(a_first ? cb : ca, a_first ? b : a, 1, n, err);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* Appends run i of src to dst. */
static int append_one(struct cg_artifact *dst, const struct cg_artifact *src, size_t i)
{
    struct cg_artifact view = *src; /* shallow: only read by the copy */
    view.runs = src->runs + i;
    view.n_runs = 1;
    return cg_artifact_append_runs(dst, &view);
}

int cg_interleave_pool(const struct cg_artifact *a, const struct cg_artifact *b,
                       struct cg_artifact *pool)
{
    if (a->n_runs == 0)
        return 0;
    if (pool->n_runs == 0 && pool->env.canary_hash == NULL && cg_artifact_copy_header(pool, a) != 0)
        return CG_ENOMEM;
    size_t n = a->n_runs > b->n_runs ? a->n_runs : b->n_runs;
    for (size_t k = 0; k < n; k++) {
        const struct cg_artifact *first = k % 2 == 0 ? a : b, *second = k % 2 == 0 ? b : a;
        if ((k < first->n_runs && append_one(pool, first, k) != 0) ||
            (k < second->n_runs && append_one(pool, second, k) != 0))
            return CG_ENOMEM;
    }
    pool->settings.runs = (int64_t)pool->n_runs;
    return 0;
}

void cg_measure_opts_init(struct cg_measure_opts *m)
{
    memset(m, 0, sizeof(*m));
    m->runs = m->steps = m->warmup = m->tokens_per_step = -1;
    m->timeout_s = 1800;
    m->grace_s = 5;
    m->step_range = NULL;
    m->let_finish = false;
    m->steps_from = CG_STEPS_FROM_AUTO;
    m->step_optimizer = -1;
}

int cg_measure_option(const char *verb, int opt, const char *arg, struct cg_measure_opts *m)
{
    switch (opt) {
    case CG_MOPT_THRESHOLDS:
        m->thresholds = arg;
        return 0;
    case CG_MOPT_RUNS:
        return cg_cmd_parse_count(verb, "--runs", arg, 1, 1000, &m->runs);
    case CG_MOPT_STEPS:
        return cg_cmd_parse_count(verb, "--steps", arg, 1, 1000000, &m->steps);
    case CG_MOPT_WARMUP:
        return cg_cmd_parse_count(verb, "--warmup", arg, 0, 1000000, &m->warmup);
    case CG_MOPT_TIMEOUT:
        return cg_cmd_parse_count(verb, "--timeout", arg, 1, 7 * 24 * 3600, &m->timeout_s);
    case CG_MOPT_GRACE:
        return cg_cmd_parse_count(verb, "--kill-grace", arg, 1, 3600, &m->grace_s);
    case CG_MOPT_TOKENS:
        return cg_cmd_parse_count(verb, "--tokens-per-step", arg, 0, INT32_MAX,
                                  &m->tokens_per_step);
    case CG_MOPT_RANGE:
        if (arg[0] == '\0' || strlen(arg) > 255)
            return cg_cmd_usage_error(verb, "--step-range: expected a name of 1 to 255 bytes");
        m->step_range = arg;
        return 0;
    case CG_MOPT_LET_FINISH:
        m->let_finish = true;
        return 0;
    case CG_MOPT_STEPS_FROM:
        if (strcmp(arg, "auto") == 0)
            m->steps_from = CG_STEPS_FROM_AUTO;
        else if (strcmp(arg, "nvtx") == 0)
            m->steps_from = CG_STEPS_FROM_NVTX;
        else if (strcmp(arg, "optimizer") == 0)
            m->steps_from = CG_STEPS_FROM_OPTIMIZER;
        else
            return cg_cmd_usage_error(verb, "--steps-from '%s': expected auto, nvtx or optimizer",
                                      arg);
        return 0;
    case CG_MOPT_STEP_OPTIMIZER:
        return cg_cmd_parse_count(verb, "--step-optimizer", arg, 1, 1000, &m->step_optimizer);
    case CG_MOPT_REDACT: {
        struct cg_err err;
        cg_err_init(&err);
        struct cg_redact *r = cg_redact_default();
        if (r == NULL)
            return cg_cmd_usage_error(verb, "--redact: out of memory");
        if (cg_redact_add_pattern(r, arg, &err) != 0)
            return cg_cmd_usage_error(verb, "%s", err.msg);
        return 0;
    }
    default:
        return 1;
    }
}

int cg_measure_settle(const struct cg_measure_opts *m, struct cg_thresholds *t,
                      struct cg_collect_cfg *c, long *runs, struct cg_err *err)
{
    int rc = cg_thresholds_load(m->thresholds, t, err);
    if (rc != 0)
        return rc;
    memset(c, 0, sizeof(*c));
    c->steps = m->steps > 0 ? m->steps : (long)t->steps;
    c->warmup = m->warmup >= 0 ? m->warmup : (long)t->warmup;
    c->step_range = m->step_range != NULL ? m->step_range : "step";
    c->tokens_per_step = m->tokens_per_step;
    c->timeout_s = m->timeout_s;
    c->grace_s = m->grace_s;
    c->let_finish = m->let_finish;
    c->steps_from = m->steps_from;
    c->step_optimizer = m->step_optimizer > 0 ? m->step_optimizer : 1;
    c->say = cg_cmd_say();
    *runs = m->runs > 0 ? m->runs : (long)t->runs;
    return 0;
}
