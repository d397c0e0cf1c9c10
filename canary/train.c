/* train: the back-end-independent training loop of canary-train (see train.h). */
#include "train.h"

#include "canary_nvtx.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int canary_trainer_init(struct canary_trainer *tr, const struct canary_config *cfg,
                        const struct canary_backend_ops *ops, struct canary_err *err)
{
    int rc = 0;
    float *params = NULL;
    memset(tr, 0, sizeof *tr);
    tr->cfg = *cfg;
    tr->ops = ops;
    const struct canary_dims *d = &cfg->dims;
    tr->micro_batch = canary_config_micro_batch(cfg);
    tr->accum = d->batch / tr->micro_batch;
    canary_layout_init(&tr->layout, d);
    rc = canary_corpus_init(&tr->corpus, d->vocab, cfg->seed, err);
    if (rc != 0)
        goto done;
    size_t tokens = (size_t)tr->micro_batch * d->seq;
    tr->row = malloc(((size_t)d->seq + 1) * sizeof *tr->row);
    tr->inputs = malloc(tokens * sizeof *tr->inputs);
    tr->targets = malloc(tokens * sizeof *tr->targets);
    params = malloc(tr->layout.total * sizeof *params);
    if (tr->row == NULL || tr->inputs == NULL || tr->targets == NULL || params == NULL) {
        rc = canary_err_set(err, CANARY_ENOMEM, "out of memory for %zu parameters",
                            tr->layout.total);
        goto done;
    }
    canary_model_init_params(params, &tr->layout, d, cfg->seed);
    rc = ops->create(&tr->be, cfg, params, err);
    if (rc != 0)
        goto done;
    tr->step_flops = canary_model_step_flops(d);
    if (cfg->extra_work_pct > 0) {
        long rows = (long)d->batch * d->seq;
        double want = cfg->extra_work_pct / 100.0 * tr->step_flops;
        double unit = canary_model_extra_unit_flops(d, rows);
        tr->extra_units = (long)floor(want / unit);
        double rest = want - (double)tr->extra_units * unit;
        tr->extra_tail = lround(rest / canary_model_extra_unit_flops(d, 1));
        if (tr->extra_tail > rows)
            tr->extra_tail = rows;
        tr->extra_flops =
            (double)tr->extra_units * unit + canary_model_extra_unit_flops(d, tr->extra_tail);
    }
done:
    free(params);
    if (rc != 0)
        canary_trainer_release(tr);
    return rc;
}

static int run_step(struct canary_trainer *tr, long s, double *loss, struct canary_err *err)
{
    const struct canary_backend_ops *ops = tr->ops;
    const struct canary_dims *d = &tr->cfg.dims;
    int rc = ops->zero_grad(tr->be, err);
    double grad_scale = 1.0 / ((double)d->batch * d->seq);
    for (int a = 0; a < tr->accum && rc == 0; a++) {
        for (int r = 0; r < tr->micro_batch; r++) {
            canary_corpus_row(&tr->corpus, s, (long)a * tr->micro_batch + r, tr->row, d->seq + 1);
            memcpy(tr->inputs + (size_t)r * d->seq, tr->row, (size_t)d->seq * sizeof(int));
            memcpy(tr->targets + (size_t)r * d->seq, tr->row + 1, (size_t)d->seq * sizeof(int));
        }
        canary_range_push("forward");
        rc = ops->forward(tr->be, tr->inputs, tr->targets, err);
        canary_range_pop();
        if (rc != 0)
            break;
        canary_range_push("backward");
        rc = ops->backward(tr->be, tr->inputs, tr->targets, grad_scale, err);
        canary_range_pop();
    }
    if (rc == 0)
        rc = ops->step_loss(tr->be, loss, err);
    if (rc != 0)
        return rc;
    canary_mark_loss(*loss); /* a non-finite one too: the gate names the step */
    if (!isfinite(*loss))
        return canary_err_set(err, CANARY_ENONFINITE, "non-finite loss (%s) at step %ld",
                              isnan(*loss) ? "nan" : "inf", s + 1);
    canary_range_push("optimizer");
    rc = ops->update(tr->be, tr->cfg.lr, tr->cfg.weight_decay, s + 1, err);
    canary_range_pop();
    if (rc == 0 && (tr->extra_units > 0 || tr->extra_tail > 0) &&
        (s + 1) % tr->cfg.extra_work_every == 0) {
        canary_range_push("extra-work");
        rc = ops->extra_work(tr->be, tr->extra_units, tr->extra_tail, err);
        canary_range_pop();
    }
    if (rc == 0)
        rc = ops->sync(tr->be, err);
    return rc;
}

int canary_trainer_step(struct canary_trainer *tr, struct canary_step_report *report,
                        struct canary_err *err)
{
    const struct canary_dims *d = &tr->cfg.dims;
    long s = tr->next_step;
    int rc = 0;
    double loss = 0;
    if (tr->cfg.inject_nan_at == s + 1) {
        /* a NaN final-layernorm gain poisons every logit of the next forward pass */
        rc = tr->ops->set_param(tr->be, tr->layout.lnf_w, NAN, err);
        if (rc != 0)
            return rc;
    }
    double t0 = now_ms();
    canary_range_push_payload("step", (long long)d->batch * d->seq);
    rc = run_step(tr, s, &loss, err);
    canary_range_pop();
    report->step = s + 1;
    report->loss = loss;
    report->ms = now_ms() - t0;
    tr->next_step = s + 1;
    return rc;
}

void canary_trainer_release(struct canary_trainer *tr)
{
    if (tr->be != NULL && tr->ops != NULL && tr->ops->destroy != NULL)
        tr->ops->destroy(tr->be);
    tr->be = NULL;
    canary_corpus_release(&tr->corpus);
    free(tr->row);
    free(tr->inputs);
    free(tr->targets);
    tr->row = tr->inputs = tr->targets = NULL;
}
