/*
 * test_opname: exact names and family keys of ops (table-driven), and demangling.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "opname.h"

#include <stdlib.h>
#include <string.h>

struct family_case {
    enum cg_op_kind kind;
    const char *name;
    const char *family;
};

static const struct family_case cases[] = {
    {CG_OP_KERNEL,
     "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
     "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)",
     "at::native::vectorized_elementwise_kernel"},
    {CG_OP_KERNEL,
     "void at::native::(anonymous namespace)::softmax_warp_forward<float, float, float, 10, false, "
     "false>(float*, float const*, int, int, int, bool const*, int, bool)",
     "at::native::(anonymous namespace)::softmax_warp_forward"},
    {CG_OP_KERNEL,
     "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_16x5_tn_align4>("
     "cutlass_80_tensorop_s1688gemm_128x128_16x5_tn_align4::Params)",
     "cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_16x5_tn_align4>"},
    {CG_OP_KERNEL,
     "void cutlass::Kernel<cutlass::gemm::kernel::Gemm<cutlass::gemm::threadblock::Mma<float>, 4>, "
     "int>(cutlass::gemm::kernel::Gemm<float>::Params)",
     "cutlass::Kernel<cutlass::gemm::kernel::Gemm<cutlass::gemm::threadblock::Mma<float>, 4>>"},
    {CG_OP_KERNEL, "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "nccl:AllReduce"},
    {CG_OP_KERNEL, "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
     "nccl:AllGather"},
    {CG_OP_KERNEL, "triton_poi_fused_add_mul_0", "triton_poi_fused_add_mul"},
    {CG_OP_KERNEL, "triton_red_fused__softmax_12", "triton_red_fused__softmax"},
    {CG_OP_KERNEL, "ampere_sgemm_128x64_tn", "ampere_sgemm_128x64_tn"},
    {CG_OP_KERNEL, "matmul_kernel(float const*, float*, int)", "matmul_kernel"},
    {CG_OP_RANGE, "forward<stage 2>", "forward<stage 2>"},
    {CG_OP_MEMCPY, "memcpy HtoD", "memcpy HtoD"},
};

static void test_opname__families(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *f = cg_opname_family(cases[i].kind, cases[i].name);
        assert_non_null(f);
        if (strcmp(f, cases[i].family) != 0)
            fail_msg("family of '%s': got '%s', want '%s'", cases[i].name, f, cases[i].family);
        free(f);
    }
}

static void test_opname__communication_is_told_apart(void **state)
{
    (void)state;
    assert_true(cg_opname_is_comm("nccl:AllReduce"));
    assert_false(cg_opname_is_comm("at::native::vectorized_elementwise_kernel"));
    assert_false(cg_opname_is_comm(NULL));
}

static void test_opname__demangles_kernel_names(void **state)
{
    (void)state;
    if (!cg_opname_can_demangle())
        skip();
    char *d = cg_opname_demangle("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEEEEviT0_");
    assert_non_null(d);
    assert_string_equal(d, "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float> >(int, at::native::FillFunctor<float>)");
    char *f = cg_opname_family(CG_OP_KERNEL, d);
    assert_string_equal(f, "at::native::vectorized_elementwise_kernel");
    free(f);
    free(d);
    assert_null(cg_opname_demangle("matmul_kernel"));
    assert_null(cg_opname_demangle("_Znot valid"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_opname__families),
        cmocka_unit_test(test_opname__communication_is_told_apart),
        cmocka_unit_test(test_opname__demangles_kernel_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
