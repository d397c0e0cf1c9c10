/*
 * opname: the two keys of an op, its exact (demangled) name and its family.
 *
 * Kernel names arrive mangled ("_ZN2at6native...") and are demangled with the C++ ABI's
 * __cxa_demangle, looked up at run time in libstdc++ so nothing here needs a C++ link. The family
 * groups the variants of one kernel so that a changed template choice shows up as the same
 * family with a different exact name:
 *   - the return type, the parameter list and every template argument list are dropped
 *     ("void at::native::elementwise_kernel<128, 4, ...>(int, ...)" -> "at::native::elementwise_kernel");
 *   - CUTLASS/CuTe-style kernels keep their first template argument, which names the tile
 *     configuration ("cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_...>");
 *   - NCCL kernels become "nccl:<collective>" ("ncclDevKernel_AllReduce_Sum_f32_RING_LL" ->
 *     "nccl:AllReduce"): communication time includes waiting for peers and is reported apart;
 *   - Triton kernels lose their numeric suffix ("triton_poi_fused_add_0" -> "triton_poi_fused_add").
 * Other kinds (ranges, copies, sets) keep their name as family. Thread-safe; no state but the
 * demangler's address, found once.
 */
#ifndef CG_OPNAME_H
#define CG_OPNAME_H

#include "artifact.h"

#include <stdbool.h>

/* Demangles an Itanium C++ ABI name. Returns a malloc'ed string (caller frees), or NULL when the
 * name is not mangled, does not demangle, or no demangler can be found. */
char *cg_opname_demangle(const char *mangled);

/* True when a C++ demangler was found (libstdc++ is loaded or loadable). */
bool cg_opname_can_demangle(void);

/* Returns the family key of an op with the given (demangled) name: malloc'ed, caller frees;
 * NULL only when out of memory. */
char *cg_opname_family(enum cg_op_kind kind, const char *name);

/* True for families of communication kernels ("nccl:..."). */
bool cg_opname_is_comm(const char *family);

#endif
