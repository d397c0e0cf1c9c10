/* cpu_f32: the float instance of the CPU operators and model (see cpu_kernels.h). */
#include "cpu_kernels.h"

#include "canary_nvtx.h"
#include "model.h"

#include <tgmath.h>
#include <stdlib.h>
#include <string.h>

#define real float
#define CPU_FN(name) canary_cpu_##name##_f32
#define CPU_T(name) canary_cpu_##name##_f32

#include "cpu_ops.inc"
#include "cpu_model.inc"
