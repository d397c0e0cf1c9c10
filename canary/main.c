/*
 * main: the canary-train command — parses options, picks the device, runs the training loop
 * and prints one header line, a loss line every --log-every steps and a summary line on
 * stdout (formats in docs/canary.md). The only file that prints or exits; maps error codes to
 * the exit codes of common.h. Single-threaded apart from the back end's own threads.
 */
#include "backend.h"
#include "common.h"
#include "config.h"
#include "gradcheck.h"
#include "train.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

static const char usage[] =
    "usage: canary-train [options]\n"
    "Trains a small decoder-only transformer on a seeded synthetic corpus: the training\n"
    "canary of canary-gate.\n"
    "\n"
    "  --device auto|cpu|cuda   where to train (auto: cuda when a device is usable)\n"
    "  --preset tiny|small      model and batch sizes (default tiny)\n"
    "  --steps N                optimizer steps (preset default: tiny 100, small 50)\n"
    "  --seed N                 corpus and initial weights (default 1)\n"
    "  --layers N  --width N  --heads N  --seq N  --batch N  --vocab N\n"
    "                           override one size of the preset\n"
    "  --lr X                   AdamW learning rate (tiny 3e-3, small 1e-3)\n"
    "  --weight-decay X         AdamW decoupled weight decay (default 0)\n"
    "  --log-every N            print the loss every N steps (default 10)\n"
    "  --variant NAME           regression variant: none, slow-attention, small-batch,\n"
    "                           extra-sync, mem-bloat\n"
    "  --extra-work PCT         extra matmul work per step, PCT %% of the model's FLOPs\n"
    "  --extra-work-every N     the extra work on every N-th step only (default 1)\n"
    "  --threads N              CPU threads, 0 = all (OpenMP builds; tiny 1, small 0)\n"
    "  --inject-nan-at STEP     poison a weight before STEP (tests the non-finite exit)\n"
    "  --gradcheck              check every backward pass numerically (CPU) and exit\n"
    "  --help                   this text\n"
    "\n"
    "exit codes: 0 trained, 2 usage, 3 run-time error, 4 CUDA requested but unavailable,\n"
    "5 non-finite loss, 6 gradient check failed\n";

struct options {
    struct canary_config cfg;
    int gradcheck;
};

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("canary-train: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs(" (see --help)\n", stderr);
    va_end(ap);
    return CANARY_EXIT_USAGE;
}

static int parse_long(const char *opt, const char *s, long min, long max, long *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < min || v > max) {
        fprintf(stderr, "canary-train: %s wants an integer %ld .. %ld, not '%s' (see --help)\n",
                opt, min, max, s);
        return CANARY_EXIT_USAGE;
    }
    *out = v;
    return 0;
}

static int parse_int(const char *opt, const char *s, long min, long max, int *out)
{
    long v = 0;
    int rc = parse_long(opt, s, min, max, &v);
    if (rc == 0)
        *out = (int)v;
    return rc;
}

static int parse_double(const char *opt, const char *s, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !isfinite(v)) {
        fprintf(stderr, "canary-train: %s wants a number, not '%s' (see --help)\n", opt, s);
        return CANARY_EXIT_USAGE;
    }
    *out = v;
    return 0;
}

/* Splits "--name=value" or "--name value"; returns the value or NULL (usage error printed). */
static const char *option_value(int argc, char **argv, int *i, const char *arg)
{
    const char *eq = strchr(arg, '=');
    if (eq != NULL)
        return eq + 1;
    if (*i + 1 >= argc) {
        usage_error("%s needs a value", arg);
        return NULL;
    }
    return argv[++*i];
}

static int is_option(const char *arg, const char *name)
{
    size_t n = strlen(name);
    return strncmp(arg, name, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
}

static int apply_option(struct options *o, const char *arg, const char *val)
{
    struct canary_config *c = &o->cfg;
    struct canary_err err;
    canary_err_init(&err);
    if (is_option(arg, "--device")) {
        if (canary_device_parse(val, &c->device, &err) != 0)
            return usage_error("%s", err.msg);
        return 0;
    }
    if (is_option(arg, "--variant")) {
        if (canary_variant_parse(val, &c->variant, &err) != 0)
            return usage_error("%s", err.msg);
        return 0;
    }
    if (is_option(arg, "--steps"))
        return parse_long("--steps", val, 1, 100000000L, &c->steps);
    if (is_option(arg, "--seed")) {
        long s = 0;
        int rc = parse_long("--seed", val, 0, 2147483647L, &s);
        c->seed = (uint64_t)s;
        return rc;
    }
    if (is_option(arg, "--layers"))
        return parse_int("--layers", val, 1, 256, &c->dims.layers);
    if (is_option(arg, "--width"))
        return parse_int("--width", val, 1, 16384, &c->dims.width);
    if (is_option(arg, "--heads"))
        return parse_int("--heads", val, 1, 16384, &c->dims.heads);
    if (is_option(arg, "--seq"))
        return parse_int("--seq", val, 2, 8192, &c->dims.seq);
    if (is_option(arg, "--batch"))
        return parse_int("--batch", val, 1, 4096, &c->dims.batch);
    if (is_option(arg, "--vocab"))
        return parse_int("--vocab", val, 2, 1 << 20, &c->dims.vocab);
    if (is_option(arg, "--lr"))
        return parse_double("--lr", val, &c->lr);
    if (is_option(arg, "--weight-decay"))
        return parse_double("--weight-decay", val, &c->weight_decay);
    if (is_option(arg, "--extra-work"))
        return parse_double("--extra-work", val, &c->extra_work_pct);
    if (is_option(arg, "--extra-work-every"))
        return parse_long("--extra-work-every", val, 1, 1000000L, &c->extra_work_every);
    if (is_option(arg, "--log-every"))
        return parse_long("--log-every", val, 1, 100000000L, &c->log_every);
    if (is_option(arg, "--threads"))
        return parse_int("--threads", val, 0, 1024, &c->threads);
    if (is_option(arg, "--inject-nan-at"))
        return parse_long("--inject-nan-at", val, 0, 100000000L, &c->inject_nan_at);
    return usage_error("unknown option '%s'", arg);
}

static int takes_value(const char *arg)
{
    static const char *const flags[] = {"--gradcheck", "--help"};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        if (strcmp(arg, flags[i]) == 0)
            return 0;
    return 1;
}

/* Returns -1 to go on, else an exit code. --preset applies first so sizes can override it. */
static int parse_args(int argc, char **argv, struct options *o)
{
    const char *preset = "tiny";
    struct canary_err err;
    canary_err_init(&err);
    memset(o, 0, sizeof *o);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(usage, stdout);
            return CANARY_EXIT_OK;
        }
        if (is_option(argv[i], "--preset")) {
            preset = option_value(argc, argv, &i, argv[i]);
            if (preset == NULL)
                return CANARY_EXIT_USAGE;
        } else if (strncmp(argv[i], "--", 2) == 0 && takes_value(argv[i]) &&
                   strchr(argv[i], '=') == NULL) {
            i++; /* skip the value */
        }
    }
    if (canary_config_preset(&o->cfg, preset, &err) != 0)
        return usage_error("%s", err.msg);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--gradcheck") == 0) {
            o->gradcheck = 1;
            continue;
        }
        if (strncmp(arg, "--", 2) != 0)
            return usage_error("unexpected argument '%s'", arg);
        const char *val = option_value(argc, argv, &i, arg);
        if (val == NULL)
            return CANARY_EXIT_USAGE;
        if (is_option(arg, "--preset"))
            continue;
        int rc = apply_option(o, arg, val);
        if (rc != 0)
            return rc;
    }
    if (canary_config_check(&o->cfg, &err) != 0)
        return usage_error("%s", err.msg);
    return -1;
}

static int fail(const struct canary_err *err)
{
    fprintf(stderr, "canary-train: %s\n", err->msg);
    return canary_exit_code(err->code);
}

static int run_gradcheck(void)
{
    struct canary_gradcheck_result results[128];
    int count = 0, bad = 0;
    struct canary_err err;
    canary_err_init(&err);
    if (canary_gradcheck_run(results, 128, &count, &err) != 0)
        return fail(&err);
    double worst = 0;
    for (int i = 0; i < count; i++) {
        const struct canary_gradcheck_result *r = &results[i];
        int ok = r->max_rel_err <= CANARY_GRADCHECK_TOLERANCE;
        bad += !ok;
        worst = r->max_rel_err > worst ? r->max_rel_err : worst;
        printf("gradcheck %-32s max_rel_err %.3e checked %ld%s\n", r->name, r->max_rel_err,
               r->checked, ok ? "" : " FAIL");
    }
    printf("gradcheck worst %.3e tolerance %.1e %s\n", worst, CANARY_GRADCHECK_TOLERANCE,
           bad ? "FAIL" : "ok");
    if (bad) {
        fprintf(stderr, "canary-train: gradient check failed for %d of %d gradients\n", bad, count);
        return CANARY_EXIT_GRADCHECK;
    }
    return CANARY_EXIT_OK;
}

/* Resolves --device into a back end; prints and returns an exit code, or -1 to go on. */
static int pick_backend(const struct canary_config *cfg, const struct canary_backend_ops **ops)
{
    char why[256];
    if (cfg->device == CANARY_DEVICE_CPU) {
        *ops = &canary_cpu_backend;
        return -1;
    }
    if (canary_cuda_probe(why, sizeof why)) {
        *ops = canary_cuda_ops();
        return -1;
    }
    if (cfg->device == CANARY_DEVICE_CUDA) {
        fprintf(stderr, "canary-train: --device cuda: no usable CUDA device (%s)\n", why);
        return CANARY_EXIT_NODEVICE;
    }
    *ops = &canary_cpu_backend;
    return -1;
}

static void print_header(const struct canary_trainer *tr)
{
    const struct canary_config *c = &tr->cfg;
    const struct canary_dims *d = &c->dims;
    printf("canary-train device=%s preset=%s variant=%s layers=%d width=%d heads=%d seq=%d "
           "batch=%d micro_batch=%d vocab=%d params=%zu tokens_per_step=%ld step_flops=%.4g "
           "extra_work_pct=%g extra_work_every=%ld extra_flops=%.4g activation_bytes=%zu seed=%llu steps=%ld lr=%g "
           "runs_on=\"%s\"\n",
           tr->ops->name, c->preset, canary_variant_name(c->variant), d->layers, d->width, d->heads,
           d->seq, d->batch, tr->micro_batch, d->vocab, tr->layout.total, (long)d->batch * d->seq,
           tr->step_flops, c->extra_work_pct, c->extra_work_every, tr->extra_flops, tr->ops->activation_bytes(tr->be),
           (unsigned long long)c->seed, c->steps, c->lr, tr->ops->describe(tr->be));
    /* the model FLOPs of one token, forward and backward: canary-gate reads this line for MFU */
    printf("canary-gate flops_per_token: %.0f\n",
           tr->step_flops / ((double)d->batch * (double)d->seq));
    fflush(stdout);
}

int main(int argc, char **argv)
{
    struct options o;
    struct canary_trainer tr;
    struct canary_err err;
    const struct canary_backend_ops *ops = NULL;
    int code = parse_args(argc, argv, &o);
    memset(&tr, 0, sizeof tr);
    canary_err_init(&err);
    if (code >= 0)
        return code;
#ifdef _OPENMP
    /* the gradient check runs thousands of tiny passes: threads would only add barriers */
    if (o.gradcheck)
        omp_set_num_threads(1);
    else if (o.cfg.threads > 0)
        omp_set_num_threads(o.cfg.threads);
#endif
    if (o.gradcheck)
        return run_gradcheck();
    code = pick_backend(&o.cfg, &ops);
    if (code >= 0)
        return code;
    if (canary_trainer_init(&tr, &o.cfg, ops, &err) != 0)
        return fail(&err);
    print_header(&tr);
    double first = 0, last = 0, total_ms = 0, timed_ms = 0;
    long timed = 0;
    code = CANARY_EXIT_OK;
    for (long s = 0; s < o.cfg.steps; s++) {
        struct canary_step_report rep;
        if (canary_trainer_step(&tr, &rep, &err) != 0) {
            fflush(stdout);
            code = fail(&err);
            goto done;
        }
        if (s == 0)
            first = rep.loss;
        last = rep.loss;
        total_ms += rep.ms;
        if (s > 0 || o.cfg.steps == 1) { /* the first step warms caches and the device */
            timed_ms += rep.ms;
            timed++;
        }
        if (rep.step == 1 || rep.step % o.cfg.log_every == 0 || rep.step == o.cfg.steps) {
            printf("step %ld loss %.6f ms %.3f\n", rep.step, rep.loss, rep.ms);
            fflush(stdout);
        }
    }
    double mean_ms = timed > 0 ? timed_ms / (double)timed : 0;
    double tokens = (double)o.cfg.dims.batch * o.cfg.dims.seq;
    printf("done steps=%ld first_loss=%.6f last_loss=%.6f mean_step_ms=%.3f tokens_per_s=%.1f "
           "total_ms=%.1f\n",
           o.cfg.steps, first, last, mean_ms, mean_ms > 0 ? tokens / (mean_ms / 1e3) : 0.0,
           total_ms);
done:
    canary_trainer_release(&tr);
    return code;
}
