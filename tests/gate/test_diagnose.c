/*
 * test_diagnose: each diagnosis rule fires on a crafted pair of artifacts and stays quiet on a
 * pair that lacks its pattern; evidence figures, severities, ordering and caps are pinned.
 * Artifacts are built in code: fixture steps without noise, ops added per step.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "diagnose.h"
#include "fixtures.h"
#include "stats.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define MS 1e6
#define US 1e3
#define GIB 1073741824LL
#define MIB 1048576LL

struct pair {
    struct cg_artifact b, c;
    struct cg_diagnosis d;
};

/* Two sides of 3 runs x 20 steps with exact step times (ms) and peaks (-1: unknown). */
static void make_pair(struct pair *p, double base_ms, double cur_ms, int64_t dev_b, int64_t dev_c)
{
    struct cg_fixture fb = {3, 20, base_ms * MS, 0.0, 0.0, 1024, dev_b, 200 * MIB, 0, 1};
    struct cg_fixture fc = fb;
    fc.mean_ns = cur_ms * MS;
    fc.peak_device_bytes = dev_c;
    cg_artifact_init(&p->b);
    cg_artifact_init(&p->c);
    assert_int_equal(cg_fixture_make(&p->b, &fb), 0);
    assert_int_equal(cg_fixture_make(&p->c, &fc), 0);
}

static void free_pair(struct pair *p)
{
    cg_artifact_release(&p->b);
    cg_artifact_release(&p->c);
}

static void diagnose(struct pair *p)
{
    assert_int_equal(cg_diagnose(&p->b, &p->c, &p->d), 0);
}

static const struct cg_finding *find(const struct cg_diagnosis *d, enum cg_diag_rule rule)
{
    for (size_t i = 0; i < d->n; i++) {
        if (d->items[i].rule == rule)
            return &d->items[i];
    }
    return NULL;
}

static size_t count(const struct cg_diagnosis *d, enum cg_diag_rule rule)
{
    size_t n = 0;
    for (size_t i = 0; i < d->n; i++)
        n += d->items[i].rule == rule;
    return n;
}

static void add_op(struct cg_artifact *a, const char *name, const char *family,
                   enum cg_op_kind kind, double calls, double ns)
{
    assert_int_equal(cg_fixture_add_op(a, name, family, kind, calls, ns), 0);
}

static void test_diagnose__host_bound_when_idle_grows(void **state)
{
    (void)state;
    struct pair p;
    make_pair(&p, 10, 10, GIB, GIB);
    cg_fixture_set_busy(&p.b, 0.9);
    cg_fixture_set_busy(&p.c, 0.5);
    diagnose(&p);
    const struct cg_finding *f = find(&p.d, CG_DIAG_HOST_BOUND);
    assert_non_null(f);
    assert_int_equal(f->severity, CG_DIAG_WARNING);
    assert_float_equal(f->current, 50.0, 1e-6);
    assert_float_equal(f->baseline, 10.0, 1e-6);
    assert_string_equal(f->unit, "pct");
    assert_string_equal(f->finding,
                        "GPU idle 50.0% of step time (baseline 10.0%): busy 5.00 ms of 10.00 ms "
                        "per step");
    assert_non_null(strstr(f->action, "data loading"));
    free_pair(&p);
}

static void test_diagnose__host_bound_quiet_when_gpu_busy(void **state)
{
    (void)state;
    struct pair p;
    make_pair(&p, 10, 10, GIB, GIB);
    cg_fixture_set_busy(&p.b, 0.9);
    cg_fixture_set_busy(&p.c, 0.85); /* idle 15%: below 30% and grown by 5 points only */
    diagnose(&p);
    assert_null(find(&p.d, CG_DIAG_HOST_BOUND));
    /* no busy time recorded: no finding */
    cg_fixture_set_busy(&p.c, -1);
    diagnose(&p);
    assert_null(find(&p.d, CG_DIAG_HOST_BOUND));
    free_pair(&p);
}

static void test_diagnose__host_bound_standing_is_a_note(void **state)
{
    (void)state;
    struct pair p;
    make_pair(&p, 10, 10, GIB, GIB);
    cg_fixture_set_busy(&p.b, 0.6);
    cg_fixture_set_busy(&p.c, 0.6);
    diagnose(&p);
    const struct cg_finding *f = find(&p.d, CG_DIAG_HOST_BOUND);
    assert_non_null(f);
    assert_int_equal(f->severity, CG_DIAG_NOTE);
    assert_float_equal(f->current, 40.0, 1e-6);
    /* without a baseline the same pattern is a note with no baseline figure */
    assert_int_equal(cg_diagnose(NULL, &p.c, &p.d), 0);
    f = find(&p.d, CG_DIAG_HOST_BOUND);
    assert_non_null(f);
    assert_int_equal(f->severity, CG_DIAG_NOTE);
    assert_true(isnan(f->baseline));
    assert_null(strstr(f->finding, "baseline"));
    free_pair(&p);
}

static void test_diagnose__copy_share_grown(void **state)
{
    (void)state;
    struct pair p;
    make_pair(&p, 10, 10, GIB, GIB);
    add_op(&p.b, "gemm", NULL, CG_OP_KERNEL, 10, 9 * MS);
    add_op(&p.b, "memcpy HtoD pinned", NULL, CG_OP_MEMCPY, 2, 1 * MS);
    add_op(&p.c, "gemm", NULL, CG_OP_KERNEL, 10, 6 * MS);
    add_op(&p.c, "memcpy HtoD pinned", NULL, CG_OP_MEMCPY, 4, 3 * MS);
    add_op(&p.c, "memcpy DtoH pinned", NULL, CG_OP_MEMCPY, 4, 1 * MS);
    diagnose(&p);
    const struct cg_finding *f = find(&p.d, CG_DIAG_COPY_SHARE);
    assert_non_null(f);
    assert_int_equal(f->severity, CG_DIAG_WARNING);
    assert_float_equal(f->current, 40.0, 1e-6);
    assert_float_equal(f->baseline, 10.0, 1e-6);
    assert_string_equal(f->finding, "copies take 40.0% of GPU time (baseline 10.0%): 4.00 ms of "
                                    "10.00 ms per step in 8.0 copies");
    free_pair(&p);
}

static void test_diagnose__copy_share_quiet_when_small(void **state)
{
    (void)state;
    struct pair p;
    make_pair(&p, 10, 10, GIB, GIB);
    add_op(&p.b, "gemm", NULL, CG_OP_KERNEL, 10, 9 * MS);
    add_op(&p.b, "memcpy HtoD pinned", NULL, CG_OP_MEMCPY, 2, 1 * MS);
    add_op(&p.c, "gemm", NULL, CG_OP_KERNEL, 10, 8.5 * MS);
    add_op(&p.c, "memcpy HtoD pinned", NULL, CG_OP_MEMCPY, 2, 1.5 * MS); /* 15%, +5 points */
    diagnose(&p);
    assert_null(find(&p.d, CG_DIAG_COPY_SHARE));
    free_pair(&p);
}

static void test_diagnose__pageable_copies(void **state)
{
    (void)state;
    struct pair p;
    make_pair(&p, 10, 10, GIB, GIB);
    add_op(&p.b, "memcpy HtoD pinned", NULL, CG_OP_MEMCPY, 4, 0.5 * MS);
    add_op(&p.c, "memcpy HtoD pageable", NULL, CG_OP_MEMCPY, 4, 0.5 * MS);
    add_op(&p.c, "memcpy DtoH pageable", NULL, CG_OP_MEMCPY, 1, 0.1 * MS);
    diagnose(&p);
    const struct cg_finding *f = find(&p.d, CG_DIAG_PAGEABLE_COPIES);
    assert_non_null(f);
    assert_int_equal(f->severity, CG_DIAG_WARNING);
    assert_string_equal(f->subject, "memcpy HtoD pageable");
    assert_float_equal(f->current, 0.6 * MS, 1.0);
    assert_float_equal(f->baseline, 0.0, 0.0);
    assert_string_equal(f->finding, "copies from pageable host memory take 600.00 us per step "
                                    "(6.0% of step time; baseline 0 ns) in 5.0 calls, most in "
                                    "'memcpy HtoD pageable'");
    assert_non_null(strstr(f->action, "pin_memory"));
    free_pair(&p);
}

static void test_diagnose__pageable_needs_the_word(void **state)
{
    (void)state;
    struct pair p;
    make_pair(&p, 10, 10, GIB, GIB);
    add_op(&p.c, "memcpy HtoD pinned", NULL, CG_OP_MEMCPY, 4, 2 * MS);
    add_op(&p.c, "memcpy HtoD", NULL, CG_OP_MEMCPY, 4, 2 * MS);
    add_op(&p.c, "memcpy HtoD nonpageable", NULL, CG_OP_MEMCPY, 4, 2 * MS);
    add_op(&p.c, "pageable", NULL, CG_OP_RANGE, 4, 2 * MS); /* a range, not a copy */
    /* pageable but tiny: 0.5% of the step */
    add_op(&p.c, "memcpy DtoH pageable", NULL, CG_OP_MEMCPY, 1, 0.05 * MS);
    diagnose(&p);
    assert_null(find(&p.d, CG_DIAG_PAGEABLE_COPIES));
    free_pair(&p);
}

static void test_diagnose__launch_bound(void **state)
{
    (void)state;
    struct pair p;
    make_pair(&p, 10, 10, GIB, GIB);
    add_op(&p.b, "small", NULL, CG_OP_KERNEL, 200, 200 * 4 * US);
    add_op(&p.c, "small", NULL, CG_OP_KERNEL, 500, 500 * 4 * US);
    diagnose(&p);
    const struct cg_finding *f = find(&p.d, CG_DIAG_LAUNCH_BOUND);
    assert_non_null(f);
    assert_int_equal(f->severity, CG_DIAG_WARNING); /* launches grew by 150% */
    assert_float_equal(f->current, 500.0, 1e-6);
    assert_float_equal(f->baseline, 200.0, 1e-6);
    assert_string_equal(f->finding, "500 kernel launches per step averaging 4.00 us (baseline "
                                    "200 averaging 4.00 us)");
    assert_non_null(strstr(f->action, "CUDA graph"));
    free_pair(&p);
    /* the same pattern on both sides is a note */
    make_pair(&p, 10, 10, GIB, GIB);
    add_op(&p.b, "small", NULL, CG_OP_KERNEL, 500, 500 * 4 * US);
    add_op(&p.c, "small", NULL, CG_OP_KERNEL, 500, 500 * 4 * US);
    diagnose(&p);
    assert_int_equal(find(&p.d, CG_DIAG_LAUNCH_BOUND)->severity, CG_DIAG_NOTE);
    free_pair(&p);
}

static void test_diagnose__launch_bound_quiet_for_few_or_long_kernels(void **state)
{
    (void)state;
    struct pair p;
    make_pair(&p, 10, 10, GIB, GIB);
    add_op(&p.c, "big", NULL, CG_OP_KERNEL, 50, 50 * 4 * US); /* few launches */
    diagnose(&p);
    assert_null(find(&p.d, CG_DIAG_LAUNCH_BOUND));
    free_pair(&p);
    make_pair(&p, 10, 10, GIB, GIB);
    add_op(&p.c, "big", NULL, CG_OP_KERNEL, 500, 500 * 15 * US); /* long kernels */
    diagnose(&p);
    assert_null(find(&p.d, CG_DIAG_LAUNCH_BOUND));
    free_pair(&p);
}

static void test_diagnose__kernel_family_new_and_vanished(void **state)
{
    (void)state;
    struct pair p;
    make_pair(&p, 10, 10, GIB, GIB);
    add_op(&p.b, "void gemm_a<128, 64>(float*)", "gemm_a", CG_OP_KERNEL, 1, 6 * MS);
    add_op(&p.b, "elementwise<4>", "elementwise", CG_OP_KERNEL, 10, 2 * MS);
    add_op(&p.c, "void gemm_b<256>(float*)", "gemm_b", CG_OP_KERNEL, 1, 7 * MS);
    add_op(&p.c, "elementwise<8>", "elementwise", CG_OP_KERNEL, 10, 2 * MS);
    add_op(&p.c, "tiny_new", NULL, CG_OP_KERNEL, 1, 0.2 * MS); /* 2.2% of kernel time */
    diagnose(&p);
    assert_int_equal(count(&p.d, CG_DIAG_KERNEL_CHOICE), 2);
    const struct cg_finding *f = find(&p.d, CG_DIAG_KERNEL_CHOICE);
    /* the larger share first: gemm_b has 7/9.2 of kernel time, gemm_a had 6/8 */
    assert_string_equal(f->subject, "gemm_b");
    assert_int_equal(f->severity, CG_DIAG_WARNING);
    assert_float_equal(f->current, 700.0 / 9.2, 1e-6);
    assert_float_equal(f->baseline, 0.0, 0.0);
    assert_string_equal(f->finding,
                        "new kernel family 'gemm_b' takes 76.1% of kernel time (7.00 ms per step)");
    assert_string_equal(f[1].subject, "gemm_a");
    assert_string_equal(f[1].finding, "kernel family 'gemm_a' vanished; it took 75.0% of the "
                                      "baseline's kernel time (6.00 ms per step)");
    free_pair(&p);
}

static void test_diagnose__kernel_family_quiet_for_variants(void **state)
{
    (void)state;
    struct pair p;
    make_pair(&p, 10, 10, GIB, GIB);
    /* the exact name changed within a family: not a new family */
    add_op(&p.b, "void gemm_a<128, 64>(float*)", "gemm_a", CG_OP_KERNEL, 1, 6 * MS);
    add_op(&p.c, "void gemm_a<256, 32>(float*)", "gemm_a", CG_OP_KERNEL, 1, 6 * MS);
    diagnose(&p);
    assert_null(find(&p.d, CG_DIAG_KERNEL_CHOICE));
    free_pair(&p);
    /* a baseline without GPU metrics: every family would look new, so nothing is said */
    make_pair(&p, 10, 10, -1, GIB);
    add_op(&p.c, "gemm_b", NULL, CG_OP_KERNEL, 1, 6 * MS);
    diagnose(&p);
    assert_null(find(&p.d, CG_DIAG_KERNEL_CHOICE));
    free_pair(&p);
}

static void test_diagnose__kernel_family_findings_capped(void **state)
{
    (void)state;
    struct pair p;
    make_pair(&p, 10, 10, GIB, GIB);
    add_op(&p.b, "old", NULL, CG_OP_KERNEL, 1, 1 * MS);
    for (int i = 0; i < 10; i++) {
        char name[32];
        snprintf(name, sizeof(name), "fam_%d", i);
        add_op(&p.c, name, NULL, CG_OP_KERNEL, 1, (double)(i + 1) * MS);
    }
    diagnose(&p);
    assert_int_equal(count(&p.d, CG_DIAG_KERNEL_CHOICE), CG_DIAG_FAMILY_MAX);
    /* the largest families are the ones kept, largest first */
    const struct cg_finding *f = find(&p.d, CG_DIAG_KERNEL_CHOICE);
    assert_string_equal(f[0].subject, "old");
    assert_string_equal(f[1].subject, "fam_9");
    assert_string_equal(f[2].subject, "fam_8");
    assert_string_equal(f[3].subject, "fam_7");
    free_pair(&p);
}

static void test_diagnose__memory_growth_names_the_op(void **state)
{
    (void)state;
    struct pair p;
    make_pair(&p, 10, 10, GIB, GIB + 256 * MIB);
    add_op(&p.b, "attention", NULL, CG_OP_KERNEL, 2, 2 * MS);
    add_op(&p.c, "attention", NULL, CG_OP_KERNEL, 2, 3 * MS);
    add_op(&p.b, "cat", NULL, CG_OP_KERNEL, 4, 0.1 * MS);
    add_op(&p.c, "cat", NULL, CG_OP_KERNEL, 12, 0.2 * MS);
    diagnose(&p);
    const struct cg_finding *f = find(&p.d, CG_DIAG_MEMORY_GROWTH);
    assert_non_null(f);
    assert_int_equal(f->severity, CG_DIAG_WARNING);
    assert_string_equal(f->unit, "bytes");
    assert_float_equal(f->current, (double)(GIB + 256 * MIB), 0.5);
    assert_float_equal(f->baseline, (double)GIB, 0.5);
    assert_string_equal(f->subject, "attention");
    assert_string_equal(f->finding,
                        "peak device memory grew from 1.00 GiB to 1.25 GiB (+25.0%, +256.0 MiB); "
                        "the artifact has no per-op allocation data, and the op that grew most "
                        "in time per step is 'attention' (+1.00 ms), in calls 'cat' (+8.0)");
    assert_non_null(strstr(f->action, "memory"));
    free_pair(&p);
}

static void test_diagnose__memory_growth_host_rss_without_gpu(void **state)
{
    (void)state;
    struct pair p;
    make_pair(&p, 10, 10, -1, -1);
    for (size_t r = 0; r < p.c.n_runs; r++)
        p.c.runs[r].summary.peak_host_rss_bytes = 400 * MIB;
    diagnose(&p);
    const struct cg_finding *f = find(&p.d, CG_DIAG_MEMORY_GROWTH);
    assert_non_null(f);
    assert_string_equal(f->finding, "peak host RSS grew from 200.0 MiB to 400.0 MiB (+100.0%, "
                                    "+200.0 MiB); the artifact has no per-op allocation data, "
                                    "and no op grew in time or calls per step");
    assert_string_equal(f->subject, "");
    assert_non_null(strstr(f->action, "host memory"));
    free_pair(&p);
}

static void test_diagnose__memory_growth_quiet_when_small(void **state)
{
    (void)state;
    struct pair p;
    make_pair(&p, 10, 10, GIB, GIB + 8 * MIB); /* +0.8%, +8 MiB */
    for (size_t r = 0; r < p.c.n_runs; r++)
        p.c.runs[r].summary.peak_host_rss_bytes = 400 * MIB; /* device is measured: RSS unused */
    diagnose(&p);
    assert_null(find(&p.d, CG_DIAG_MEMORY_GROWTH));
    free_pair(&p);
}

static void test_diagnose__host_range_grew_while_gpu_flat(void **state)
{
    (void)state;
    struct pair p;
    make_pair(&p, 10, 12, GIB, GIB);
    cg_fixture_set_busy(&p.b, 0.8);        /* 8 ms busy */
    cg_fixture_set_busy(&p.c, 8.0 / 12.0); /* still 8 ms busy */
    add_op(&p.b, "step/data_load", NULL, CG_OP_RANGE, 1, 1 * MS);
    add_op(&p.c, "step/data_load", NULL, CG_OP_RANGE, 1, 3 * MS);
    add_op(&p.b, "step/forward", NULL, CG_OP_RANGE, 1, 4 * MS);
    add_op(&p.c, "step/forward", NULL, CG_OP_RANGE, 1, 4 * MS);
    diagnose(&p);
    const struct cg_finding *f = find(&p.d, CG_DIAG_HOST_RANGE_GROWTH);
    assert_non_null(f);
    assert_int_equal(f->severity, CG_DIAG_WARNING);
    assert_string_equal(f->subject, "step/data_load");
    assert_float_equal(f->current, 3 * MS, 1.0);
    assert_float_equal(f->baseline, 1 * MS, 1.0);
    assert_string_equal(f->finding, "host range 'step/data_load' grew +2.00 ms per step (+200.0%, "
                                    "to 3.00 ms; every run, by +2.00 ms at least) while GPU busy "
                                    "time per step changed +0.0%");
    free_pair(&p);
}

static void test_diagnose__host_range_without_gpu_metrics(void **state)
{
    (void)state;
    struct pair p;
    make_pair(&p, 10, 12, -1, -1);
    add_op(&p.b, "attention", NULL, CG_OP_RANGE, 4, 4 * MS);
    add_op(&p.c, "attention", NULL, CG_OP_RANGE, 4, 6 * MS);
    diagnose(&p);
    const struct cg_finding *f = find(&p.d, CG_DIAG_HOST_RANGE_GROWTH);
    assert_non_null(f);
    assert_string_equal(f->finding, "host range 'attention' grew +2.00 ms per step (+50.0%, to "
                                    "6.00 ms; every run, by +2.00 ms at least) while GPU time was "
                                    "not measured on either side");
    free_pair(&p);
}

static void test_diagnose__host_range_quiet_when_gpu_grew_too(void **state)
{
    (void)state;
    struct pair p;
    make_pair(&p, 10, 12, GIB, GIB);
    cg_fixture_set_busy(&p.b, 0.8); /* 8 ms busy, then 9.6 ms: +20% */
    cg_fixture_set_busy(&p.c, 0.8);
    add_op(&p.b, "step/data_load", NULL, CG_OP_RANGE, 1, 1 * MS);
    add_op(&p.c, "step/data_load", NULL, CG_OP_RANGE, 1, 3 * MS);
    diagnose(&p);
    assert_null(find(&p.d, CG_DIAG_HOST_RANGE_GROWTH));
    free_pair(&p);
    /* GPU metrics on one side only: the sides cannot be compared */
    make_pair(&p, 10, 12, -1, GIB);
    add_op(&p.b, "step/data_load", NULL, CG_OP_RANGE, 1, 1 * MS);
    add_op(&p.c, "step/data_load", NULL, CG_OP_RANGE, 1, 3 * MS);
    diagnose(&p);
    assert_null(find(&p.d, CG_DIAG_HOST_RANGE_GROWTH));
    free_pair(&p);
    /* a small growth (0.1 ms of a 10 ms step) is not material */
    make_pair(&p, 10, 10, GIB, GIB);
    cg_fixture_set_busy(&p.b, 0.8);
    cg_fixture_set_busy(&p.c, 0.8);
    add_op(&p.b, "step/data_load", NULL, CG_OP_RANGE, 1, 0.1 * MS);
    add_op(&p.c, "step/data_load", NULL, CG_OP_RANGE, 1, 0.2 * MS);
    diagnose(&p);
    assert_null(find(&p.d, CG_DIAG_HOST_RANGE_GROWTH));
    free_pair(&p);
}

/* Process states as the H100 showed them (19.5 ms in some processes, 25 ms in others, fixed
 * for a process's life): each of n runs of 20 steps is slow with probability 1/2 (every host
 * time x1.28) and has its own +-3% on top; GPU busy 10 ms a step in every run. The ranges
 * forward 6, backward 8, data 1 + data_ms and optimizer 2 ms a step follow the process. */
static void draw_process_states(struct cg_artifact *a, size_t n, double data_ms, uint64_t *rng)
{
    struct cg_fixture f = {n, 20, 20 * MS, 0.0, 0.0, 1024, GIB, 200 * MIB, 0, 1};
    cg_artifact_init(a);
    assert_int_equal(cg_fixture_make(a, &f), 0);
    static const char *const names[] = {"forward", "backward", "data", "optimizer"};
    for (size_t r = 0; r < n; r++) {
        struct cg_run *run = &a->runs[r];
        double u = (double)(cg_stats_rand(rng) >> 11) / 9007199254740992.0;
        double k = (cg_stats_rand(rng) & 1 ? 1.28 : 1.0) * (0.97 + 0.06 * u);
        double ms[] = {6, 8, 1 + data_ms, 2};
        for (size_t s = 0; s < run->n_steps; s++) {
            run->steps[s].wall_ns = (int64_t)llround((17 * k + data_ms) * MS);
            run->steps[s].gpu_busy_ns = (int64_t)(10 * MS);
        }
        for (size_t i = 0; i < 4; i++) {
            double per = i == 2 ? (1 * k + data_ms) * MS : ms[i] * k * MS;
            assert_int_equal(cg_run_add_op(run, names[i], NULL, CG_OP_RANGE, 20,
                                           (int64_t)llround(per * 20)),
                             0);
        }
    }
}

/* How often host_range_growth fires (and names "data") over reps pairs of nb and nc runs. */
static void range_rates(size_t nb, size_t nc, double data_ms, int reps, double *fired,
                        double *named)
{
    uint64_t rng = 0x5eed0 + nb * 131 + nc * 7 + (uint64_t)(data_ms * 10);
    int f = 0, d = 0;
    for (int i = 0; i < reps; i++) {
        struct pair p;
        draw_process_states(&p.b, nb, 0.0, &rng);
        draw_process_states(&p.c, nc, data_ms, &rng);
        diagnose(&p);
        const struct cg_finding *x = find(&p.d, CG_DIAG_HOST_RANGE_GROWTH);
        f += x != NULL;
        d += x != NULL && strcmp(x->subject, "data") == 0;
        free_pair(&p);
    }
    *fired = (double)f / reps;
    *named = (double)d / reps;
}

/* The size of host_range_growth under the null of process states, and its power. The rule
 * fired on A/A runs of both canaries on the H100 (2026-11-27): pooled range means of a few
 * processes differ by the processes' states alone. Needing every current run above every
 * baseline run, by both limits, it fires under this null only when every current process is
 * slow and every baseline one fast (1/64 with 3 a side, 1/1024 with 5); it needs
 * CG_DIAG_RANGE_MIN_RUNS (3) runs a side and is silent below. */
static void test_diagnose__host_range_size_and_power_under_process_states(void **state)
{
    (void)state;
    double fired, named;
    range_rates(3, 3, 0.0, 2000, &fired, &named);
    print_message("host_range_growth A/A, 3 v 3 runs: fired %.2f%%\n", 100 * fired);
    assert_true(fired <= 0.025);
    range_rates(5, 5, 0.0, 2000, &fired, &named);
    print_message("host_range_growth A/A, 5 v 5 runs: fired %.2f%%\n", 100 * fired);
    assert_true(fired <= 0.005);
    range_rates(10, 10, 0.0, 500, &fired, &named);
    print_message("host_range_growth A/A, 10 v 10 runs: fired %.2f%%\n", 100 * fired);
    assert_true(fired <= 0.005);
    /* fewer than 3 runs a side: silent, whatever the ranges did */
    range_rates(2, 2, 2.0, 200, &fired, &named);
    assert_true(fired == 0.0);
    range_rates(1, 3, 2.0, 200, &fired, &named);
    assert_true(fired == 0.0);
    /* power: the data range +2 ms and +1 ms a step in every current process (10% and 5% of
     * the step), named */
    range_rates(3, 3, 2.0, 1000, &fired, &named);
    print_message("host_range_growth data +2 ms, 3 v 3: fired %.1f%%, named data %.1f%%\n",
                  100 * fired, 100 * named);
    assert_true(named >= 0.95);
    range_rates(5, 5, 1.0, 1000, &fired, &named);
    print_message("host_range_growth data +1 ms, 5 v 5: fired %.1f%%, named data %.1f%%\n",
                  100 * fired, 100 * named);
    assert_true(named >= 0.95);
}

/* Mean of a 20-step straight loss line over the steps [lo, lo + 5): a quarter of the run. */
static double quarter(double first, double last, double lo)
{
    return first + (last - first) * (lo + 2.0) / 19.0;
}

static void test_diagnose__loss_rising_against_baseline(void **state)
{
    (void)state;
    struct pair p;
    make_pair(&p, 10, 10, GIB, GIB);
    cg_fixture_set_loss(&p.b, 2.4, 2.0);
    cg_fixture_set_loss(&p.c, 2.4, 2.8);
    diagnose(&p);
    const struct cg_finding *f = find(&p.d, CG_DIAG_LOSS_DIVERGENCE);
    assert_non_null(f);
    assert_int_equal(f->severity, CG_DIAG_WARNING);
    assert_string_equal(f->unit, "loss");
    assert_float_equal(f->current, quarter(2.4, 2.8, 15), 1e-9);
    assert_float_equal(f->baseline, quarter(2.4, 2.0, 15), 1e-9);
    assert_string_equal(f->finding, "loss rose from 2.442 to 2.758 over the run (+12.9%, first "
                                    "and last quarter of steps); the baseline's went from 2.358 "
                                    "to 2.042 (-13.4%), so this run ends +35.1% against it");
    assert_non_null(strstr(f->action, "learning rate"));
    /* without a baseline the rising curve is still said, as a note */
    assert_int_equal(cg_diagnose(NULL, &p.c, &p.d), 0);
    f = find(&p.d, CG_DIAG_LOSS_DIVERGENCE);
    assert_non_null(f);
    assert_int_equal(f->severity, CG_DIAG_NOTE);
    assert_string_equal(f->finding, "loss rose from 2.442 to 2.758 over the run (+12.9%, first "
                                    "and last quarter of steps)");
    free_pair(&p);
}

static void test_diagnose__loss_final_above_baseline(void **state)
{
    (void)state;
    struct pair p;
    make_pair(&p, 10, 10, GIB, GIB);
    cg_fixture_set_loss(&p.b, 2.4, 2.0);
    cg_fixture_set_loss(&p.c, 2.4, 2.2); /* still falling, but ends 8.8% higher */
    diagnose(&p);
    const struct cg_finding *f = find(&p.d, CG_DIAG_LOSS_DIVERGENCE);
    assert_non_null(f);
    assert_int_equal(f->severity, CG_DIAG_WARNING);
    assert_non_null(strstr(f->finding, "loss went from 2.379 to 2.221 over the run (-6.6%"));
    assert_non_null(strstr(f->finding, "so this run ends +8.8% against it"));
    free_pair(&p);
}

static void test_diagnose__loss_quiet_when_close_or_missing(void **state)
{
    (void)state;
    struct pair p;
    make_pair(&p, 10, 10, GIB, GIB);
    cg_fixture_set_loss(&p.b, 2.4, 2.0);
    cg_fixture_set_loss(&p.c, 2.4, 2.05); /* ends 2.2% higher */
    diagnose(&p);
    assert_null(find(&p.d, CG_DIAG_LOSS_DIVERGENCE));
    /* a baseline that rose as much: a rising curve that did not change */
    cg_fixture_set_loss(&p.b, 2.0, 2.4);
    cg_fixture_set_loss(&p.c, 2.0, 2.4);
    diagnose(&p);
    assert_null(find(&p.d, CG_DIAG_LOSS_DIVERGENCE));
    /* no loss reported */
    cg_fixture_set_loss(&p.c, NAN, NAN);
    diagnose(&p);
    assert_null(find(&p.d, CG_DIAG_LOSS_DIVERGENCE));
    /* fewer than CG_DIAG_LOSS_MIN_STEPS steps with a loss */
    cg_fixture_set_loss(&p.b, NAN, NAN);
    for (size_t r = 0; r < p.c.n_runs; r++) {
        for (size_t i = 0; i < CG_DIAG_LOSS_MIN_STEPS - 1; i++)
            p.c.runs[r].steps[i].loss = 1.0 + (double)i;
    }
    assert_int_equal(cg_diagnose(NULL, &p.c, &p.d), 0);
    assert_null(find(&p.d, CG_DIAG_LOSS_DIVERGENCE));
    free_pair(&p);
}

static void test_diagnose__warnings_first_and_names_cut(void **state)
{
    (void)state;
    struct pair p;
    make_pair(&p, 10, 10, GIB, GIB);
    cg_fixture_set_busy(&p.b, 0.6);
    cg_fixture_set_busy(&p.c, 0.6); /* a standing note */
    char name[400];
    memset(name, 'k', sizeof(name));
    memcpy(name + CG_DIAG_SUBJECT_MAX - 1, "\xc3\xa9", 2); /* é across the cut */
    name[sizeof(name) - 1] = '\0';
    add_op(&p.b, "gemm_a", NULL, CG_OP_KERNEL, 1, 5 * MS);
    add_op(&p.c, name, NULL, CG_OP_KERNEL, 1, 5 * MS);
    diagnose(&p);
    assert_int_equal(p.d.items[0].severity, CG_DIAG_WARNING);
    assert_int_equal(p.d.items[p.d.n - 1].severity, CG_DIAG_NOTE);
    assert_int_equal(p.d.items[p.d.n - 1].rule, CG_DIAG_HOST_BOUND);
    const struct cg_finding *f = NULL;
    for (size_t i = 0; i < p.d.n; i++) {
        if (p.d.items[i].rule == CG_DIAG_KERNEL_CHOICE && p.d.items[i].subject[0] == 'k')
            f = &p.d.items[i];
    }
    assert_non_null(f);
    /* cut before the two-byte character, then an ellipsis */
    assert_int_equal(strlen(f->subject), CG_DIAG_SUBJECT_MAX - 1 + 3);
    assert_memory_equal(f->subject + CG_DIAG_SUBJECT_MAX - 1, "\xe2\x80\xa6", 4);
    assert_true(strlen(f->finding) < CG_DIAG_TEXT_MAX - 1);
    free_pair(&p);
}

static void test_diagnose__names_and_quiet_artifact(void **state)
{
    (void)state;
    const char *names[CG_DIAG_RULE_COUNT] = {
        "host_bound",    "copy_share",    "pageable_copies",   "launch_bound",
        "kernel_choice", "memory_growth", "host_range_growth", "loss_divergence",
        "straggler"};
    for (int r = 0; r < CG_DIAG_RULE_COUNT; r++) {
        assert_string_equal(cg_diag_rule_name((enum cg_diag_rule)r), names[r]);
        assert_true(strlen(cg_diag_rule_title((enum cg_diag_rule)r)) > 0);
    }
    assert_string_equal(cg_diag_severity_name(CG_DIAG_WARNING), "warning");
    assert_string_equal(cg_diag_severity_name(CG_DIAG_NOTE), "note");
    struct pair p;
    make_pair(&p, 10, 10, GIB, GIB);
    cg_fixture_set_busy(&p.b, 0.9);
    cg_fixture_set_busy(&p.c, 0.9);
    add_op(&p.b, "gemm", NULL, CG_OP_KERNEL, 10, 9 * MS);
    add_op(&p.c, "gemm", NULL, CG_OP_KERNEL, 10, 9 * MS);
    diagnose(&p);
    assert_int_equal(p.d.n, 0);
    assert_int_equal(p.d.n_dropped, 0);
    free_pair(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_diagnose__host_bound_when_idle_grows),
        cmocka_unit_test(test_diagnose__host_bound_quiet_when_gpu_busy),
        cmocka_unit_test(test_diagnose__host_bound_standing_is_a_note),
        cmocka_unit_test(test_diagnose__copy_share_grown),
        cmocka_unit_test(test_diagnose__copy_share_quiet_when_small),
        cmocka_unit_test(test_diagnose__pageable_copies),
        cmocka_unit_test(test_diagnose__pageable_needs_the_word),
        cmocka_unit_test(test_diagnose__launch_bound),
        cmocka_unit_test(test_diagnose__launch_bound_quiet_for_few_or_long_kernels),
        cmocka_unit_test(test_diagnose__kernel_family_new_and_vanished),
        cmocka_unit_test(test_diagnose__kernel_family_quiet_for_variants),
        cmocka_unit_test(test_diagnose__kernel_family_findings_capped),
        cmocka_unit_test(test_diagnose__memory_growth_names_the_op),
        cmocka_unit_test(test_diagnose__memory_growth_host_rss_without_gpu),
        cmocka_unit_test(test_diagnose__memory_growth_quiet_when_small),
        cmocka_unit_test(test_diagnose__host_range_grew_while_gpu_flat),
        cmocka_unit_test(test_diagnose__host_range_without_gpu_metrics),
        cmocka_unit_test(test_diagnose__host_range_quiet_when_gpu_grew_too),
        cmocka_unit_test(test_diagnose__host_range_size_and_power_under_process_states),
        cmocka_unit_test(test_diagnose__loss_rising_against_baseline),
        cmocka_unit_test(test_diagnose__loss_final_above_baseline),
        cmocka_unit_test(test_diagnose__loss_quiet_when_close_or_missing),
        cmocka_unit_test(test_diagnose__warnings_first_and_names_cut),
        cmocka_unit_test(test_diagnose__names_and_quiet_artifact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
