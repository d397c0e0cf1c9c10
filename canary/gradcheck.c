/* gradcheck: central-difference checks of the CPU back end's backward passes (gradcheck.h). */
#include "gradcheck.h"

#include "config.h"
#include "cpu_kernels.h"
#include "model.h"
#include "rng.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GC_EPS 1e-5
#define GC_SAMPLES 16

enum op_kind {
    OP_EMBEDDING,
    OP_LAYERNORM,
    OP_MATMUL,
    OP_ATTENTION,
    OP_ATTENTION_NAIVE,
    OP_GELU,
    OP_SOFTMAX_CE
};

/* One operator under test: up to three inputs x[i] with analytic gradients g[i]. */
struct op_case {
    enum op_kind kind;
    const char *name;
    const char *input_names[3];
    int ninputs;
    int b, t, c, h, v, n; /* batch, seq, channels, heads, vocab/out channels, rows */
    double *x[3], *g[3];
    size_t xn[3];
    double *out, *r; /* output and the fixed weights of L = sum(out * r) */
    size_t on;
    double *s1, *s2, *s3; /* saved statistics and scratch */
    int *tok;
};

struct results {
    struct canary_gradcheck_result *items;
    int max, count;
};

static double *dalloc(size_t n)
{
    return calloc(n > 0 ? n : 1, sizeof(double));
}

static void fill_random(double *p, size_t n, double scale, struct canary_rng *rng)
{
    for (size_t i = 0; i < n; i++)
        p[i] = scale * canary_rng_normal(rng);
}

static double weighted_sum(const double *a, const double *w, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += a[i] * w[i];
    return s;
}

/* |a - n| relative to the larger of the two, but never to less than a thousandth of the
 * tensor's largest gradient (scale): a gradient that is exactly 0 (the key bias: softmax ignores
 * a shift shared by a whole row) must not turn rounding noise of 1e-10 into a "large" error. */
static double rel_err(double a, double n, double scale)
{
    double den = fabs(a) > fabs(n) ? fabs(a) : fabs(n);
    double floor_ = 1e-3 * scale > 1e-12 ? 1e-3 * scale : 1e-12;
    return fabs(a - n) / (den > floor_ ? den : floor_);
}

static double max_abs(const double *p, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = fabs(p[i]) > m ? fabs(p[i]) : m;
    return m;
}

static void add_result(struct results *res, const char *name, double err, long checked)
{
    if (res->count >= res->max)
        return;
    struct canary_gradcheck_result *r = &res->items[res->count++];
    snprintf(r->name, sizeof r->name, "%s", name);
    r->max_rel_err = err;
    r->checked = checked;
}

static double op_loss(struct op_case *k)
{
    switch (k->kind) {
    case OP_EMBEDDING:
        canary_cpu_encoder_forward_f64(k->out, k->tok, k->x[0], k->x[1], k->b, k->t, k->c);
        break;
    case OP_LAYERNORM:
        canary_cpu_layernorm_forward_f64(k->out, k->s1, k->s2, k->x[0], k->x[1], k->x[2], k->n,
                                         k->c);
        break;
    case OP_MATMUL:
        canary_cpu_matmul_forward_f64(k->out, k->x[0], k->x[1], k->x[2], k->n, k->c, k->v);
        break;
    case OP_ATTENTION:
        canary_cpu_attention_forward_f64(k->out, k->s1, k->x[0], k->b, k->t, k->c, k->h, k->s2);
        break;
    case OP_ATTENTION_NAIVE:
        canary_cpu_attention_forward_naive_f64(k->out, k->s2, k->s1, k->x[0], k->b, k->t, k->c,
                                               k->h);
        break;
    case OP_GELU:
        canary_cpu_gelu_forward_f64(k->out, k->x[0], k->xn[0]);
        break;
    case OP_SOFTMAX_CE:
        canary_cpu_softmax_ce_forward_f64(k->s1, k->out, k->x[0], k->tok, k->n, k->v);
        break;
    }
    return weighted_sum(k->out, k->r, k->on);
}

static void op_backward(struct op_case *k)
{
    for (int i = 0; i < k->ninputs; i++)
        memset(k->g[i], 0, k->xn[i] * sizeof(double));
    op_loss(k); /* fresh saved state */
    switch (k->kind) {
    case OP_EMBEDDING:
        canary_cpu_encoder_backward_f64(k->g[0], k->g[1], k->r, k->tok, k->b, k->t, k->c);
        break;
    case OP_LAYERNORM:
        canary_cpu_layernorm_backward_f64(k->g[0], k->g[1], k->g[2], k->r, k->x[0], k->x[1], k->s1,
                                          k->s2, k->n, k->c);
        break;
    case OP_MATMUL:
        canary_cpu_matmul_backward_f64(k->g[0], k->g[1], k->g[2], k->r, k->x[0], k->x[1], k->n,
                                       k->c, k->v, k->s1);
        break;
    case OP_ATTENTION:
        canary_cpu_attention_backward_f64(k->g[0], k->r, k->x[0], k->s1, k->b, k->t, k->c, k->h,
                                          k->s3);
        break;
    case OP_ATTENTION_NAIVE:
        canary_cpu_attention_backward_naive_f64(k->g[0], k->s3, k->r, k->x[0], k->s1, k->b, k->t,
                                                k->c, k->h);
        break;
    case OP_GELU:
        canary_cpu_gelu_backward_f64(k->g[0], k->x[0], k->r, k->xn[0]);
        break;
    case OP_SOFTMAX_CE:
        canary_cpu_softmax_ce_backward_f64(k->g[0], k->s1, k->tok, k->n, k->v, 1.0);
        break;
    }
}

/* Sizes the case's buffers for its kind; 0 or -1 when out of memory. */
static int op_alloc(struct op_case *k, struct canary_rng *rng)
{
    size_t nc = (size_t)k->n * k->c, att = (size_t)k->b * k->h * k->t * k->t;
    switch (k->kind) {
    case OP_EMBEDDING:
        k->xn[0] = (size_t)k->v * k->c;
        k->xn[1] = (size_t)k->t * k->c;
        k->on = nc;
        break;
    case OP_LAYERNORM:
        k->xn[0] = nc;
        k->xn[1] = k->xn[2] = (size_t)k->c;
        k->on = nc;
        k->s1 = dalloc((size_t)k->n);
        k->s2 = dalloc((size_t)k->n);
        break;
    case OP_MATMUL:
        k->xn[0] = nc;
        k->xn[1] = (size_t)k->c * k->v;
        k->xn[2] = (size_t)k->v;
        k->on = (size_t)k->n * k->v;
        k->s1 = dalloc(k->xn[1] > nc ? k->xn[1] : nc);
        break;
    case OP_ATTENTION:
    case OP_ATTENTION_NAIVE:
        k->xn[0] = 3 * nc;
        k->on = nc;
        k->s1 = dalloc(att);
        k->s2 = dalloc(k->kind == OP_ATTENTION ? 2 * nc : att);
        k->s3 = dalloc(k->kind == OP_ATTENTION ? 4 * nc + (size_t)k->b * k->h * k->t : att);
        break;
    case OP_GELU:
        k->xn[0] = nc;
        k->on = nc;
        break;
    case OP_SOFTMAX_CE:
        k->xn[0] = (size_t)k->n * k->v;
        k->on = (size_t)k->n;
        k->s1 = dalloc(k->xn[0]);
        break;
    }
    k->out = dalloc(k->on);
    k->r = dalloc(k->on);
    k->tok = calloc((size_t)k->n, sizeof *k->tok);
    if (k->out == NULL || k->r == NULL || k->tok == NULL)
        return -1;
    for (int i = 0; i < k->ninputs; i++) {
        k->x[i] = dalloc(k->xn[i]);
        k->g[i] = dalloc(k->xn[i]);
        if (k->x[i] == NULL || k->g[i] == NULL)
            return -1;
        fill_random(k->x[i], k->xn[i], 1.0, rng);
    }
    if (k->kind == OP_SOFTMAX_CE)
        for (size_t i = 0; i < k->on; i++)
            k->r[i] = 1.0;
    else
        fill_random(k->r, k->on, 1.0, rng);
    for (int i = 0; i < k->n && k->v > 0; i++)
        k->tok[i] = (int)canary_rng_below(rng, (uint32_t)k->v);
    return 0;
}

static void op_free(struct op_case *k)
{
    for (int i = 0; i < 3; i++) {
        free(k->x[i]);
        free(k->g[i]);
    }
    free(k->out);
    free(k->r);
    free(k->s1);
    free(k->s2);
    free(k->s3);
    free(k->tok);
}

static int check_op(struct op_case *k, struct results *res, struct canary_rng *rng)
{
    int rc = 0;
    if (op_alloc(k, rng) != 0) {
        rc = -1;
        goto done;
    }
    op_backward(k);
    for (int i = 0; i < k->ninputs; i++) {
        double worst = 0, scale = max_abs(k->g[i], k->xn[i]);
        for (size_t j = 0; j < k->xn[i]; j++) {
            double keep = k->x[i][j];
            k->x[i][j] = keep + GC_EPS;
            double plus = op_loss(k);
            k->x[i][j] = keep - GC_EPS;
            double minus = op_loss(k);
            k->x[i][j] = keep;
            double e = rel_err(k->g[i][j], (plus - minus) / (2 * GC_EPS), scale);
            worst = e > worst ? e : worst;
        }
        char name[48];
        snprintf(name, sizeof name, "%s.%s", k->name, k->input_names[i]);
        add_result(res, name, worst, (long)k->xn[i]);
    }
done:
    op_free(k);
    return rc;
}

static int check_model(unsigned flags, const char *prefix, struct results *res,
                       struct canary_rng *rng, struct canary_err *err)
{
    const struct canary_dims d = {
        .vocab = 11, .seq = 5, .width = 8, .heads = 2, .layers = 2, .batch = 2};
    int n = d.batch * d.seq, rc = 0;
    struct canary_layout lay;
    canary_layout_init(&lay, &d);
    float *init = malloc(lay.total * sizeof *init);
    double *grads = dalloc(lay.total);
    int *inputs = malloc((size_t)n * sizeof *inputs),
        *targets = malloc((size_t)n * sizeof *targets);
    struct canary_cpu_model_f64 *m = canary_cpu_model_new_f64(&d, flags, err);
    if (init == NULL || grads == NULL || inputs == NULL || targets == NULL || m == NULL) {
        rc = canary_err_set(err, CANARY_ENOMEM, "out of memory for the gradient check");
        goto done;
    }
    canary_model_init_params(init, &lay, &d, 7);
    double *p = canary_cpu_model_params_f64(m);
    for (size_t i = 0; i < lay.total; i++) /* away from the symmetric start: every path matters */
        p[i] = (double)init[i] * 4.0 + 0.1 * canary_rng_normal(rng);
    for (int i = 0; i < n; i++) {
        inputs[i] = (int)canary_rng_below(rng, (uint32_t)d.vocab);
        targets[i] = (int)canary_rng_below(rng, (uint32_t)d.vocab);
    }
    canary_cpu_model_forward_f64(m, inputs, targets);
    canary_cpu_model_backward_f64(m, inputs, targets, 1.0 / n);
    memcpy(grads, canary_cpu_model_grads_f64(m), lay.total * sizeof *grads);
    int tensors = canary_layout_tensor_count(&d);
    for (int ti = 0; ti < tensors; ti++) {
        char tname[32], name[48];
        size_t off = 0, count = 0;
        canary_layout_tensor(&lay, &d, ti, tname, sizeof tname, &off, &count);
        double worst = 0, scale = max_abs(grads + off, count);
        long checked = 0;
        for (int s = 0; s < GC_SAMPLES && (size_t)s < count; s++) {
            size_t j =
                off + (count <= GC_SAMPLES ? (size_t)s : canary_rng_below(rng, (uint32_t)count));
            double keep = p[j];
            p[j] = keep + GC_EPS;
            double plus = canary_cpu_model_forward_f64(m, inputs, targets);
            p[j] = keep - GC_EPS;
            double minus = canary_cpu_model_forward_f64(m, inputs, targets);
            p[j] = keep;
            double e = rel_err(grads[j], (plus - minus) / (2 * GC_EPS), scale);
            worst = e > worst ? e : worst;
            checked++;
        }
        snprintf(name, sizeof name, "%s.%s", prefix, tname);
        add_result(res, name, worst, checked);
    }
done:
    canary_cpu_model_free_f64(m);
    free(init);
    free(grads);
    free(inputs);
    free(targets);
    return rc;
}

int canary_gradcheck_run(struct canary_gradcheck_result *results, int max, int *count,
                         struct canary_err *err)
{
    struct results res = {results, max, 0};
    struct canary_rng rng;
    canary_rng_seed(&rng, 2024, 0x6C);
    struct op_case cases[] = {
        {.kind = OP_EMBEDDING,
         .name = "embedding",
         .input_names = {"wte", "wpe"},
         .ninputs = 2,
         .b = 2,
         .t = 5,
         .c = 6,
         .v = 7,
         .n = 10},
        {.kind = OP_LAYERNORM,
         .name = "layernorm",
         .input_names = {"x", "w", "b"},
         .ninputs = 3,
         .c = 9,
         .n = 6},
        {.kind = OP_MATMUL,
         .name = "matmul",
         .input_names = {"x", "w", "bias"},
         .ninputs = 3,
         .c = 7,
         .v = 9,
         .n = 11},
        {.kind = OP_ATTENTION,
         .name = "attention",
         .input_names = {"qkv"},
         .ninputs = 1,
         .b = 2,
         .t = 5,
         .c = 8,
         .h = 2,
         .n = 10},
        {.kind = OP_ATTENTION_NAIVE,
         .name = "attention-naive",
         .input_names = {"qkv"},
         .ninputs = 1,
         .b = 2,
         .t = 5,
         .c = 8,
         .h = 2,
         .n = 10},
        {.kind = OP_GELU, .name = "gelu", .input_names = {"x"}, .ninputs = 1, .c = 5, .n = 8},
        {.kind = OP_SOFTMAX_CE,
         .name = "softmax-cross-entropy",
         .input_names = {"logits"},
         .ninputs = 1,
         .v = 9,
         .n = 6},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (check_op(&cases[i], &res, &rng) != 0)
            return canary_err_set(err, CANARY_ENOMEM, "out of memory for the gradient check");
    int rc = check_model(0, "model", &res, &rng, err);
    if (rc == 0)
        rc = check_model(CANARY_CPU_NAIVE_ATTENTION, "model-naive-attention", &res, &rng, err);
    *count = res.count;
    return rc;
}
