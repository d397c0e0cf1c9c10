/*
 * train: the training loop of canary-train, independent of the back end. Builds the corpus and
 * the initial weights from the seed, then runs optimizer steps: each step is an NVTX range
 * "step" with the step's token count as int64 payload, holding forward / backward (once per
 * micro-batch), optimizer and, with --extra-work, extra-work ranges. Times are wall-clock
 * milliseconds (CLOCK_MONOTONIC) measured after the device has finished the step. Never
 * prints. One thread.
 */
#ifndef CANARY_TRAIN_H
#define CANARY_TRAIN_H

#include "backend.h"
#include "config.h"
#include "corpus.h"
#include "model.h"

struct canary_trainer {
    struct canary_config cfg;
    const struct canary_backend_ops *ops;
    struct canary_backend *be;
    struct canary_corpus corpus;
    struct canary_layout layout;
    int micro_batch, accum; /* rows per pass, passes per step */
    int *row, *inputs, *targets;
    double step_flops;            /* model FLOPs per step */
    long extra_units, extra_tail; /* --extra-work as matmul units and tail rows */
    double extra_flops;           /* FLOPs of that extra work per step */
    long next_step;               /* steps done so far */
};

/* What one step did. */
struct canary_step_report {
    long step; /* 1-based */
    double loss;
    double ms;
};

/* Prepares a run of cfg (already checked) on ops. On failure everything is released and err
 * says why (CANARY_ENODEVICE when the back end cannot run here). Release with
 * canary_trainer_release. */
int canary_trainer_init(struct canary_trainer *tr, const struct canary_config *cfg,
                        const struct canary_backend_ops *ops, struct canary_err *err);

/* Runs the next optimizer step. CANARY_ENONFINITE (report filled, parameters not updated)
 * when the loss is NaN or infinite. */
int canary_trainer_step(struct canary_trainer *tr, struct canary_step_report *report,
                        struct canary_err *err);

/* Frees the back end, corpus and buffers; safe on a zeroed or released trainer. */
void canary_trainer_release(struct canary_trainer *tr);

#endif
