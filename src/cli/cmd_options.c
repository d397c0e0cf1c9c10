/*
 * cmd_options: the shared option families and --color (see cmd_options.h).
 */
#include "cmd_options.h"

#include "cmd.h"
#include "cmd_seq.h"
#include "github.h"
#include "history.h"
#include "redact.h"
#include "sequential.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The options that may be given again with another value: each adds to the ones before. */
static bool adds_up(int code)
{
    return code == CG_MOPT_REDACT || code == CG_ROPT_ONLY;
}

int cg_cmd_getopt(const char *verb, int argc, char *const *argv, const char *shortopts,
                  const struct option *longopts, struct cg_cmd_given *given)
{
    int index = -1;
    optarg = NULL; /* set only by an option that has a value */
    int c = getopt_long(argc, argv, shortopts, longopts, &index);
    if (c == -1 || c == '?' || c == ':' || optarg == NULL || adds_up(c))
        return c;
    for (size_t i = 0; i < given->n; i++) {
        if (given->opt[i].code != c)
            continue;
        if (strcmp(given->opt[i].value, optarg) == 0)
            return c;
        const char *name = index >= 0 ? longopts[index].name : NULL;
        for (size_t k = 0; name == NULL && longopts[k].name != NULL; k++)
            if (longopts[k].val == c)
                name = longopts[k].name;
        char shown[8];
        if (name == NULL) /* a short option without a long name */
            snprintf(shown, sizeof(shown), "%c", c);
        cg_cmd_usage_error(
            verb, "%s%s given twice with different values ('%s', '%s'): give it once",
            name != NULL ? "--" : "-", name != NULL ? name : shown, given->opt[i].value, optarg);
        return CG_OPT_REFUSED;
    }
    if (given->n < CG_CMD_GIVEN_MAX) {
        given->opt[given->n].code = c;
        given->opt[given->n].value = optarg;
        given->n++;
    }
    return c;
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
    m->flops_per_token = -1;
    m->peak_flop_per_clock = NAN;
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
        m->steps_from_given = true;
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
        return cg_cmd_parse_count(verb, "--step-optimizer", arg, 1, CG_STEP_OPTIMIZER_MAX,
                                  &m->step_optimizer);
    case CG_MOPT_SHARD_DIR:
        if (arg[0] == '\0')
            return cg_cmd_usage_error(verb, "--shard-dir: expected a directory");
        m->shard_dir = arg;
        return 0;
    case CG_MOPT_FLOPS:
        return cg_cmd_parse_count(verb, "--flops-per-token", arg, 1, LONG_MAX / 2,
                                  &m->flops_per_token);
    case CG_MOPT_PRECISION:
        if (!cg_gpu_precision_valid(arg))
            return cg_cmd_usage_error(verb, "--precision '%s': expected fp32, tf32, bf16, fp16 "
                                            "or fp8",
                                      arg);
        m->precision = arg;
        return 0;
    case CG_MOPT_PEAK: {
        char *end = NULL;
        double x = strtod(arg, &end);
        if (end == arg || *end != '\0' || !(x > 0) || !isfinite(x))
            return cg_cmd_usage_error(verb, "--peak-flop-per-clock '%s': expected a number "
                                            "above 0",
                                      arg);
        m->peak_flop_per_clock = x;
        return 0;
    }
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
    cg_measure_apply(m, t, NULL, c, runs);
    return 0;
}

/* Where steps come from: given, else optimizer steps when the baseline's came from its
 * optimizer (base NULL: none), so a script that marks its own steps in a pull request is still
 * measured by its optimizer steps against a baseline of them; else auto. A baseline of the
 * script's own ranges keeps auto (its own ranges when it has them): nvtx would take python/ off
 * the script's path, and a script importing canary_gate could not run; a pull request that drops
 * its ranges is then measured by its optimizer and the verdict says the steps differ. */
static enum cg_steps_from steps_from(const struct cg_measure_opts *m,
                                     const struct cg_artifact *base)
{
    if (m->steps_from_given || base == NULL || base->settings.steps_from == NULL ||
        strcmp(base->settings.steps_from, "optimizer") != 0)
        return m->steps_from;
    return CG_STEPS_FROM_OPTIMIZER;
}

void cg_measure_apply(const struct cg_measure_opts *m, const struct cg_thresholds *t,
                      const struct cg_artifact *base, struct cg_collect_cfg *c, long *runs)
{
    bool have_base = base != NULL && base->n_runs > 0;
    c->steps = m->steps > 0 ? m->steps : have_base ? (long)base->settings.steps : (long)t->steps;
    c->warmup = m->warmup >= 0 ? m->warmup
                : have_base    ? (long)base->settings.warmup
                               : (long)t->warmup;
    c->step_range = m->step_range                            ? m->step_range
                    : have_base && base->settings.step_range ? base->settings.step_range
                                                             : "step";
    c->tokens_per_step = m->tokens_per_step >= 0 ? m->tokens_per_step
                         : have_base             ? (long)base->settings.tokens_per_step
                                                 : -1;
    c->timeout_s = m->timeout_s;
    c->grace_s = m->grace_s;
    c->let_finish = m->let_finish;
    c->steps_from = steps_from(m, have_base ? base : NULL);
    /* the optimizer counted: given, else the baseline's (a step of another optimizer is another
     * unit of work), else the first to step */
    c->step_optimizer = m->step_optimizer > 0 ? m->step_optimizer
                        : have_base && base->settings.step_optimizer > 0
                            ? (long)base->settings.step_optimizer
                            : 1;
    c->shard_dir = m->shard_dir;
    /* MFU's inputs: given, else the baseline's, so both sides divide by the same */
    c->flops_per_token = m->flops_per_token > 0 ? m->flops_per_token
                         : have_base            ? (long)base->settings.flops_per_token
                                                : -1;
    c->precision = m->precision                              ? m->precision
                   : have_base && base->settings.precision ? base->settings.precision
                                                           : NULL;
    c->peak_flop_per_clock = isfinite(m->peak_flop_per_clock) ? m->peak_flop_per_clock
                             : have_base ? base->settings.peak_flop_per_clock
                                         : NAN;
    c->say = cg_cmd_say();
    *runs = m->runs > 0 ? m->runs : (long)t->runs;
}

int cg_cmd_seq_option(const char *verb, int opt, const char *arg, struct cg_cmd_seq_opts *o)
{
    enum cg_spend s;
    long secs;
    switch (opt) {
    case CG_SOPT_MAX_RUNS:
        return cg_cmd_parse_count(verb, "--max-runs", arg, 1, 1000, &o->max_runs);
    case CG_SOPT_BUDGET: {
        int bad = cg_cmd_parse_count(verb, "--budget", arg, 1, 7 * 24 * 3600, &secs);
        o->budget_s = (double)secs;
        return bad;
    }
    case CG_SOPT_SPENDING:
        if (cg_spend_parse(arg, &s) != 0)
            return cg_cmd_usage_error(verb,
                                      "--spending '%s': expected pocock, obrien-fleming "
                                      "or bonferroni",
                                      arg);
        o->spending = arg;
        return 0;
    case CG_SOPT_CONFIRM_RUNS:
        if (cg_cmd_parse_count(verb, "--confirm-runs", arg, 1, 1000, &o->confirm_runs) != 0)
            return CG_EXIT_INPUT;
        break;
    case CG_SOPT_NO_CONFIRM:
        o->no_confirm = true;
        break;
    default:
        return 1;
    }
    if (o->no_confirm && o->confirm_runs > 0)
        return cg_cmd_usage_error(verb,
                                  "--confirm-runs %ld and --no-confirm contradict each other: "
                                  "give one of them",
                                  o->confirm_runs);
    return 0;
}

int cg_report_option(const char *verb, int opt, const char *arg, struct cg_report_opts *r)
{
    switch (opt) {
    case CG_ROPT_ONLY: { /* --only again adds its groups (cg_cmd_getopt) */
        struct cg_err err;
        unsigned groups;
        cg_err_init(&err);
        if (cg_thresholds_parse_only(arg, &groups, &err) != 0)
            return cg_cmd_usage_error(verb, "%s", err.msg);
        r->only |= groups;
        return 0;
    }
    case CG_ROPT_REPORT:
        r->report_path = arg;
        return 0;
    case CG_ROPT_JSON:
        r->json_path = arg;
        return 0;
    case CG_ROPT_ID: { /* one rule for every command's gate id: the comment's marker holds it */
        struct cg_err err;
        cg_err_init(&err);
        if (cg_github_id_check(arg, &err) != 0)
            return cg_cmd_usage_error(verb, "--id: %s", err.msg);
        r->gate_id = arg;
        return 0;
    }
    case CG_ROPT_FOI:
        r->fail_on_inconclusive = true;
        return 0;
    default:
        return 1;
    }
}

void cg_cmd_cp_opts_init(struct cg_cmd_cp_opts *o)
{
    cg_cp_defaults(&o->cp);
    o->keep = CG_HISTORY_DEFAULT_KEEP;
}

int cg_cmd_cp_option(const char *verb, int opt, const char *arg, struct cg_cmd_cp_opts *o)
{
    long v;
    switch (opt) {
    case CG_CPOPT_ALPHA: {
        char *end = NULL;
        double a = strtod(arg, &end);
        if (end == arg || *end != '\0' || !(a > 0 && a < 1))
            return cg_cmd_usage_error(verb, "--alpha '%s': expected a number between 0 and 1", arg);
        o->cp.alpha = a;
        return 0;
    }
    case CG_CPOPT_MIN_SEGMENT:
        if (cg_cmd_parse_count(verb, "--min-segment", arg, 2, 1000, &v) != 0)
            return CG_EXIT_INPUT;
        o->cp.min_segment = (size_t)v;
        return 0;
    case CG_CPOPT_PERMUTATIONS:
        if (cg_cmd_parse_count(verb, "--permutations", arg, 19, 100000, &v) != 0)
            return CG_EXIT_INPUT;
        o->cp.permutations = (int)v;
        return 0;
    case CG_CPOPT_KEEP:
        return cg_cmd_parse_count(verb, "--keep", arg, 1, CG_CMD_KEEP_MAX, &o->keep);
    default:
        return 1;
    }
}

int cg_cmd_color(const char *verb, const char *when, bool *color)
{
    if (strcmp(when, "auto") != 0 && strcmp(when, "always") != 0 && strcmp(when, "never") != 0)
        return cg_cmd_usage_error(verb, "--color '%s': expected auto, always or never", when);
    *color = strcmp(when, "always") == 0 ||
             (strcmp(when, "auto") == 0 && isatty(STDOUT_FILENO) && !getenv("NO_COLOR"));
    return 0;
}
