/* model: parameter layout, initial weights and FLOP counts of the canary transformer (model.h). */
#include "model.h"

#include "rng.h"

#include <math.h>
#include <stdio.h>

static const char *const block_tensor_names[CANARY_BLOCK_TENSORS] = {
    "ln1_w", "ln1_b", "qkv_w", "qkv_b", "proj_w",   "proj_b",
    "ln2_w", "ln2_b", "fc_w",  "fc_b",  "fcproj_w", "fcproj_b"};

static size_t block_tensor_count(const struct canary_dims *d, int t)
{
    size_t c = (size_t)d->width;
    switch (t) {
    case CANARY_QKV_W:
        return c * 3 * c;
    case CANARY_QKV_B:
        return 3 * c;
    case CANARY_PROJ_W:
        return c * c;
    case CANARY_FC_W:
    case CANARY_FCPROJ_W:
        return c * 4 * c;
    case CANARY_FC_B:
        return 4 * c;
    default:
        return c;
    }
}

void canary_layout_init(struct canary_layout *lay, const struct canary_dims *d)
{
    size_t c = (size_t)d->width;
    size_t at = 0;
    lay->wte = at;
    at += (size_t)d->vocab * c;
    lay->wpe = at;
    at += (size_t)d->seq * c;
    lay->block0 = at;
    size_t in = 0;
    for (int t = 0; t < CANARY_BLOCK_TENSORS; t++) {
        lay->in_block[t] = in;
        in += block_tensor_count(d, t);
    }
    lay->block_stride = in;
    at += in * (size_t)d->layers;
    lay->lnf_w = at;
    at += c;
    lay->lnf_b = at;
    at += c;
    lay->head_w = at;
    at += c * (size_t)d->vocab;
    lay->total = at;
}

size_t canary_layout_block(const struct canary_layout *lay, int l, enum canary_block_tensor t)
{
    return lay->block0 + (size_t)l * lay->block_stride + lay->in_block[t];
}

int canary_layout_tensor_count(const struct canary_dims *dims)
{
    return 5 + CANARY_BLOCK_TENSORS * dims->layers;
}

int canary_layout_tensor(const struct canary_layout *lay, const struct canary_dims *d, int i,
                         char *name, size_t name_size, size_t *offset, size_t *count)
{
    size_t c = (size_t)d->width;
    int nblock = CANARY_BLOCK_TENSORS * d->layers;
    const char *fixed = NULL;
    if (i < 0 || i >= canary_layout_tensor_count(d))
        return -1;
    if (i == 0) {
        fixed = "wte";
        *offset = lay->wte;
        *count = (size_t)d->vocab * c;
    } else if (i == 1) {
        fixed = "wpe";
        *offset = lay->wpe;
        *count = (size_t)d->seq * c;
    } else if (i < 2 + nblock) {
        int l = (i - 2) / CANARY_BLOCK_TENSORS;
        int t = (i - 2) % CANARY_BLOCK_TENSORS;
        *offset = canary_layout_block(lay, l, (enum canary_block_tensor)t);
        *count = block_tensor_count(d, t);
        if (name != NULL)
            snprintf(name, name_size, "h%d.%s", l, block_tensor_names[t]);
        return 0;
    } else if (i == 2 + nblock) {
        fixed = "lnf_w";
        *offset = lay->lnf_w;
        *count = c;
    } else if (i == 3 + nblock) {
        fixed = "lnf_b";
        *offset = lay->lnf_b;
        *count = c;
    } else {
        fixed = "head_w";
        *offset = lay->head_w;
        *count = c * (size_t)d->vocab;
    }
    if (name != NULL)
        snprintf(name, name_size, "%s", fixed);
    return 0;
}

static void fill_normal(float *p, size_t n, double std, struct canary_rng *rng)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (float)(std * canary_rng_normal(rng));
}

static void fill_value(float *p, size_t n, float v)
{
    for (size_t i = 0; i < n; i++)
        p[i] = v;
}

void canary_model_init_params(float *params, const struct canary_layout *lay,
                              const struct canary_dims *d, uint64_t seed)
{
    struct canary_rng rng;
    canary_rng_seed(&rng, seed, 0x1417);
    const double std = 0.02;
    const double resid_std = std / sqrt(2.0 * d->layers);
    size_t c = (size_t)d->width;
    fill_normal(params + lay->wte, (size_t)d->vocab * c, std, &rng);
    fill_normal(params + lay->wpe, (size_t)d->seq * c, std, &rng);
    for (int l = 0; l < d->layers; l++) {
        for (int t = 0; t < CANARY_BLOCK_TENSORS; t++) {
            float *p = params + canary_layout_block(lay, l, (enum canary_block_tensor)t);
            size_t n = block_tensor_count(d, t);
            switch (t) {
            case CANARY_LN1_W:
            case CANARY_LN2_W:
                fill_value(p, n, 1.0f);
                break;
            case CANARY_QKV_W:
            case CANARY_FC_W:
                fill_normal(p, n, std, &rng);
                break;
            case CANARY_PROJ_W:
            case CANARY_FCPROJ_W:
                fill_normal(p, n, resid_std, &rng);
                break;
            default: /* biases and layernorm shifts */
                fill_value(p, n, 0.0f);
                break;
            }
        }
    }
    fill_value(params + lay->lnf_w, c, 1.0f);
    fill_value(params + lay->lnf_b, c, 0.0f);
    fill_normal(params + lay->head_w, c * (size_t)d->vocab, std, &rng);
}

double canary_model_step_flops(const struct canary_dims *d)
{
    double c = d->width, tokens = (double)d->batch * d->seq;
    double matmul =
        d->layers * (2.0 * c * 3 * c + 2.0 * c * c + 2.0 * 2 * c * 4 * c) + 2.0 * c * d->vocab;
    /* causal attention: on average (T+1)/2 keys, a q.k and an a.v product of C each */
    double attention = d->layers * 2.0 * 2.0 * c * (d->seq + 1) / 2.0;
    return 3.0 * tokens * (matmul + attention);
}

double canary_model_extra_unit_flops(const struct canary_dims *d, long rows)
{
    return 2.0 * (double)rows * d->width * 4.0 * d->width;
}
