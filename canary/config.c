/* config: presets, validation and the variant/device names of canary-train (see config.h). */
#include "config.h"

#include <string.h>

static const char *const variant_names[] = {"none", "slow-attention", "small-batch", "extra-sync",
                                            "mem-bloat"};

int canary_config_preset(struct canary_config *cfg, const char *name, struct canary_err *err)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->seed = 1;
    cfg->lr = 3e-3;
    cfg->weight_decay = 0.0;
    cfg->log_every = 10;
    cfg->extra_work_every = 1;
    cfg->device = CANARY_DEVICE_AUTO;
    cfg->variant = CANARY_VARIANT_NONE;
    if (strcmp(name, "tiny") == 0) {
        /* ~0.1 M parameters, 256 tokens per step: tens of ms per step on one CPU core. */
        cfg->preset = "tiny";
        cfg->dims = (struct canary_dims){
            .vocab = 64, .seq = 64, .width = 64, .heads = 4, .layers = 2, .batch = 4};
        cfg->steps = 100;
        /* one thread: threads gain ~5% here, and spinning OpenMP barriers on a shared CI
         * runner can make steps many times slower and their times erratic */
        cfg->threads = 1;
    } else if (strcmp(name, "small") == 0) {
        /* ~20 M parameters, 2048 tokens per step: real work for a GPU. */
        cfg->preset = "small";
        cfg->dims = (struct canary_dims){
            .vocab = 1024, .seq = 256, .width = 512, .heads = 8, .layers = 6, .batch = 8};
        cfg->steps = 50;
        cfg->lr = 1e-3;
    } else {
        return canary_err_set(err, CANARY_EUSAGE, "unknown preset '%s' (tiny, small)", name);
    }
    return 0;
}

int canary_config_check(const struct canary_config *cfg, struct canary_err *err)
{
    const struct canary_dims *d = &cfg->dims;
    if (d->vocab < 2 || d->vocab > (1 << 20))
        return canary_err_set(err, CANARY_EUSAGE, "--vocab must be 2 .. 1048576, not %d", d->vocab);
    if (d->seq < 2 || d->seq > 8192)
        return canary_err_set(err, CANARY_EUSAGE, "--seq must be 2 .. 8192, not %d", d->seq);
    if (d->width < 1 || d->width > 16384)
        return canary_err_set(err, CANARY_EUSAGE, "--width must be 1 .. 16384, not %d", d->width);
    if (d->heads < 1 || d->width % d->heads != 0)
        return canary_err_set(err, CANARY_EUSAGE, "--heads (%d) must divide --width (%d)", d->heads,
                              d->width);
    if (d->layers < 1 || d->layers > 256)
        return canary_err_set(err, CANARY_EUSAGE, "--layers must be 1 .. 256, not %d", d->layers);
    if (d->batch < 1 || d->batch > 4096)
        return canary_err_set(err, CANARY_EUSAGE, "--batch must be 1 .. 4096, not %d", d->batch);
    if ((double)d->batch * d->seq * d->width > 1e9)
        return canary_err_set(err, CANARY_EUSAGE, "batch x seq x width is too large");
    if (cfg->steps < 1)
        return canary_err_set(err, CANARY_EUSAGE, "--steps must be at least 1");
    if (!(cfg->lr > 0.0))
        return canary_err_set(err, CANARY_EUSAGE, "--lr must be positive");
    if (!(cfg->weight_decay >= 0.0))
        return canary_err_set(err, CANARY_EUSAGE, "--weight-decay must not be negative");
    if (!(cfg->extra_work_pct >= 0.0 && cfg->extra_work_pct <= 10000.0))
        return canary_err_set(err, CANARY_EUSAGE, "--extra-work must be 0 .. 10000 (percent)");
    if (cfg->extra_work_every < 1 || cfg->extra_work_every > 1000000)
        return canary_err_set(err, CANARY_EUSAGE, "--extra-work-every must be 1 .. 1000000, not %ld",
                              cfg->extra_work_every);
    if (cfg->log_every < 1)
        return canary_err_set(err, CANARY_EUSAGE, "--log-every must be at least 1");
    return 0;
}

int canary_config_micro_batch(const struct canary_config *cfg)
{
    return cfg->variant == CANARY_VARIANT_SMALL_BATCH ? 1 : cfg->dims.batch;
}

int canary_variant_parse(const char *name, enum canary_variant *out, struct canary_err *err)
{
    for (size_t i = 0; i < sizeof variant_names / sizeof variant_names[0]; i++) {
        if (strcmp(name, variant_names[i]) == 0) {
            *out = (enum canary_variant)i;
            return 0;
        }
    }
    return canary_err_set(err, CANARY_EUSAGE,
                          "unknown variant '%s' (slow-attention, small-batch, extra-sync, "
                          "mem-bloat)",
                          name);
}

const char *canary_variant_name(enum canary_variant v)
{
    size_t i = (size_t)v;
    return i < sizeof variant_names / sizeof variant_names[0] ? variant_names[i] : "?";
}

int canary_device_parse(const char *name, enum canary_device *out, struct canary_err *err)
{
    if (strcmp(name, "auto") == 0)
        *out = CANARY_DEVICE_AUTO;
    else if (strcmp(name, "cpu") == 0)
        *out = CANARY_DEVICE_CPU;
    else if (strcmp(name, "cuda") == 0)
        *out = CANARY_DEVICE_CUDA;
    else
        return canary_err_set(err, CANARY_EUSAGE, "unknown device '%s' (auto, cpu, cuda)", name);
    return 0;
}
