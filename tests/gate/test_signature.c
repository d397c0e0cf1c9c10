/*
 * test_signature: the runs' kernel sets told apart across both sides (the names that differ, the
 * runs of each side, the pooled process state of each choice) and the script changed since the
 * baseline, on fixture artifacts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fixtures.h"
#include "signature.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SM90 "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1"
#define CUTLASS "cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_256x128_32x3_tn_align8"

/* Five runs a side (fixture seeds 1 and 2), with op_0..op_3 as ranges. */
static void make_sides(struct cg_artifact *base, struct cg_artifact *cur)
{
    struct cg_fixture b = {5, 30, 1e7, 0.01, 0.02, 1024, -1, 200000000, 4, 1};
    struct cg_fixture c = b;
    c.seed = 2;
    cg_artifact_init(base);
    cg_artifact_init(cur);
    assert_int_equal(cg_fixture_make(base, &b), 0);
    assert_int_equal(cg_fixture_make(cur, &c), 0);
}

static void add_kernel(struct cg_run *run, const char *name)
{
    assert_int_equal(cg_run_add_op(run, name, NULL, CG_OP_KERNEL, 30, 3000000), 0);
}

/* Run i of the pooled runs (the baseline's first). */
static struct cg_run *pooled(struct cg_artifact *base, struct cg_artifact *cur, size_t i)
{
    return i < base->n_runs ? &base->runs[i] : &cur->runs[i - base->n_runs];
}

/* Every pooled run gets the common kernel; the runs in `gemm90` (a bit per pooled run) get SM90,
 * the others CUTLASS. The runs in `slow` take 30% longer on every step. */
static void choose(struct cg_artifact *base, struct cg_artifact *cur, unsigned gemm90,
                   unsigned slow)
{
    for (size_t i = 0; i < base->n_runs + cur->n_runs; i++) {
        struct cg_run *run = pooled(base, cur, i);
        add_kernel(run, "void at::native::elementwise_kernel<128, 4>(int)");
        add_kernel(run, (gemm90 >> i) & 1 ? SM90 : CUTLASS);
        if ((slow >> i) & 1) {
            for (size_t k = 0; k < run->n_steps; k++)
                run->steps[k].wall_ns = (int64_t)((double)run->steps[k].wall_ns * 1.3);
            cg_run_summarize(run);
        }
    }
}

static void test_signature__runs_differing_in_kernels_name_the_choice(void **state)
{
    (void)state;
    struct cg_artifact base, cur;
    struct cg_kernel_choices kc;
    make_sides(&base, &cur);
    /* SM90 in baseline runs 0-2 and current runs 0-3 (7 runs), CUTLASS in the other 3 */
    choose(&base, &cur, 0x07u | (0x0fu << 5), 0);
    assert_int_equal(cg_signature_kernels(&base, &cur, false, &kc), 0);
    assert_int_equal(kc.n, 2);
    assert_false(kc.states_known);
    assert_int_equal(kc.items[0].runs[0], 3); /* most runs first */
    assert_int_equal(kc.items[0].runs[1], 4);
    assert_int_equal(kc.items[0].n_only, 1); /* the common kernel is not a difference */
    assert_string_equal(kc.items[0].only[0], SM90);
    assert_int_equal(kc.items[0].n_without, 1);
    assert_string_equal(kc.items[0].without[0], CUTLASS);
    assert_int_equal(kc.items[1].runs[0], 2);
    assert_int_equal(kc.items[1].runs[1], 1);
    assert_string_equal(kc.items[1].only[0], CUTLASS);
    assert_false(kc.by_side);
    cg_kernel_choices_release(&kc);
    cg_artifact_release(&base);
    cg_artifact_release(&cur);
    /* every baseline run one choice, every current run the other: the change between sides */
    make_sides(&base, &cur);
    choose(&base, &cur, 0x1fu, 0);
    assert_int_equal(cg_signature_kernels(&base, &cur, false, &kc), 0);
    assert_int_equal(kc.n, 2);
    assert_true(kc.by_side);
    cg_kernel_choices_release(&kc);
    cg_artifact_release(&base);
    cg_artifact_release(&cur);
}

/* The choice whose runs are slow falls outside the pooled fast state. */
static void test_signature__each_choice_falls_in_its_process_state(void **state)
{
    (void)state;
    struct cg_artifact base, cur;
    struct cg_kernel_choices kc;
    make_sides(&base, &cur);
    unsigned gemm90 = 0x07u | (0x0fu << 5);
    choose(&base, &cur, gemm90, ~gemm90 & 0x3ffu); /* the CUTLASS runs are 30% slower */
    assert_int_equal(cg_signature_kernels(&base, &cur, true, &kc), 0);
    assert_int_equal(kc.n, 2);
    assert_true(kc.states_known);
    assert_string_equal(kc.items[0].only[0], SM90);
    assert_int_equal(kc.items[0].fast[0], 3);
    assert_int_equal(kc.items[0].fast[1], 4);
    assert_string_equal(kc.items[1].only[0], CUTLASS);
    assert_int_equal(kc.items[1].fast[0], 0);
    assert_int_equal(kc.items[1].fast[1], 0);
    cg_kernel_choices_release(&kc);
    cg_artifact_release(&base);
    cg_artifact_release(&cur);
}

/* One kernel set, no kernels at all (a CPU canary) or on one side (not measured), and a set that
 * lacks a kernel the others have (named by what it lacks). */
static void test_signature__one_set_no_kernels_and_a_missing_kernel(void **state)
{
    (void)state;
    struct cg_artifact base, cur;
    struct cg_kernel_choices kc;
    make_sides(&base, &cur);
    assert_int_equal(cg_signature_kernels(&base, &cur, true, &kc), 0);
    assert_int_equal(kc.n, 0); /* ranges only */
    cg_kernel_choices_release(&kc);
    for (size_t r = 0; r < cur.n_runs; r++)
        add_kernel(&cur.runs[r], SM90);
    assert_int_equal(cg_signature_kernels(&base, &cur, true, &kc), 0);
    assert_int_equal(kc.n, 1); /* the baseline measured no kernels: no choice among its runs */
    assert_int_equal(kc.items[0].runs[0], 0);
    cg_kernel_choices_release(&kc);
    choose(&base, &cur, 0x3ffu, 0);
    assert_int_equal(cg_signature_kernels(&base, &cur, true, &kc), 0);
    assert_int_equal(kc.n, 1);
    assert_int_equal(kc.items[0].n_only + kc.items[0].n_without, 0);
    cg_kernel_choices_release(&kc);
    add_kernel(&cur.runs[4], "triton_poi_fused_add_0"); /* one run also ran this */
    add_kernel(&cur.runs[4], "void at::native::elementwise_kernel<128, 4>(int)"); /* again */
    assert_int_equal(cg_signature_kernels(&base, &cur, false, &kc), 0);
    assert_int_equal(kc.n, 2);
    assert_int_equal(kc.items[0].runs[0] + kc.items[0].runs[1], 9);
    assert_int_equal(kc.items[0].n_only, 0);
    assert_string_equal(kc.items[0].without[0], "triton_poi_fused_add_0");
    assert_int_equal(kc.items[1].runs[1], 1);
    assert_string_equal(kc.items[1].only[0], "triton_poi_fused_add_0");
    cg_kernel_choices_release(&kc);
    cg_artifact_release(&base);
    cg_artifact_release(&cur);
}

/* Runs that list the same kernels in other orders, or one twice, ran the same set: one choice.
 * One run more with a kernel of its own is then the only other choice. */
static void test_signature__the_same_kernels_in_another_order_are_one_choice(void **state)
{
    (void)state;
    static const char *const names[] = {"k_c", SM90, "k_a", CUTLASS, "k_b"};
    struct cg_artifact base, cur;
    struct cg_kernel_choices kc;
    make_sides(&base, &cur);
    for (size_t i = 0; i < base.n_runs + cur.n_runs; i++) {
        struct cg_run *run = pooled(&base, &cur, i);
        for (size_t k = 0; k < 5; k++) /* rotated by the run's index, the current side's reversed */
            add_kernel(run, names[((i < base.n_runs ? k : 4 - k) + i) % 5]);
        if (i == 7)
            add_kernel(run, "k_a"); /* again */
    }
    assert_int_equal(cg_signature_kernels(&base, &cur, true, &kc), 0);
    assert_int_equal(kc.n, 1);
    assert_int_equal(kc.items[0].runs[0] + kc.items[0].runs[1], 10);
    assert_int_equal(kc.items[0].n_only + kc.items[0].n_without, 0);
    cg_kernel_choices_release(&kc);
    add_kernel(&cur.runs[3], "k_z");
    assert_int_equal(cg_signature_kernels(&base, &cur, false, &kc), 0);
    assert_int_equal(kc.n, 2);
    assert_int_equal(kc.items[0].runs[0] + kc.items[0].runs[1], 9);
    assert_int_equal(kc.items[0].n_only, 0);
    assert_int_equal(kc.items[0].n_without, 1);
    assert_string_equal(kc.items[0].without[0], "k_z");
    assert_int_equal(kc.items[1].runs[1], 1);
    assert_int_equal(kc.items[1].n_only, 1);
    assert_string_equal(kc.items[1].only[0], "k_z");
    cg_kernel_choices_release(&kc);
    cg_artifact_release(&base);
    cg_artifact_release(&cur);
}

static void set_code(struct cg_artifact *a, size_t run, const char *path, const char *hash)
{
    assert_int_equal(cg_run_code_add_file(&a->runs[run].code, path, hash), 0);
}

struct code_case {
    const char *base_hash[2]; /* train.py in baseline runs 0 and 1 (NULL: not recorded) */
    const char *cur_hash;     /* in every current run */
    size_t changed;
};

/* The script changed: a hash no baseline run had for the path. A baseline that recorded no
 * files says nothing; a baseline that pooled the current contents among others is not changed. */
static void test_signature__the_script_changed_since_the_baseline(void **state)
{
    (void)state;
    static const struct code_case cases[] = {
        {{"fnv1a64:aaaa", "fnv1a64:aaaa"}, "fnv1a64:bbbb", 1},
        {{"fnv1a64:aaaa", "fnv1a64:aaaa"}, "fnv1a64:aaaa", 0},
        {{"fnv1a64:aaaa", "fnv1a64:bbbb"}, "fnv1a64:bbbb", 0},
        {{NULL, NULL}, "fnv1a64:bbbb", 0},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        struct cg_artifact base, cur;
        struct cg_code_change c;
        make_sides(&base, &cur);
        for (size_t r = 0; r < 2; r++)
            if (cases[k].base_hash[r] != NULL)
                set_code(&base, r, "train.py", cases[k].base_hash[r]);
        for (size_t r = 0; r < base.n_runs; r++)
            set_code(&base, r, "python3", "fnv1a64:1111");
        for (size_t r = 0; r < cur.n_runs; r++) {
            set_code(&cur, r, "python3", "fnv1a64:1111");
            set_code(&cur, r, "train.py", cases[k].cur_hash);
        }
        cg_signature_code_change(&base, &cur, &c);
        if (c.n_changed != cases[k].changed)
            fail_msg("case %zu: %zu files changed, expected %zu", k, c.n_changed, cases[k].changed);
        if (c.n_changed > 0)
            assert_string_equal(c.files[0], "train.py");
        assert_int_equal(c.n_files, c.n_changed);
        cg_artifact_release(&base);
        cg_artifact_release(&cur);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_signature__runs_differing_in_kernels_name_the_choice),
        cmocka_unit_test(test_signature__each_choice_falls_in_its_process_state),
        cmocka_unit_test(test_signature__one_set_no_kernels_and_a_missing_kernel),
        cmocka_unit_test(test_signature__the_same_kernels_in_another_order_are_one_choice),
        cmocka_unit_test(test_signature__the_script_changed_since_the_baseline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
