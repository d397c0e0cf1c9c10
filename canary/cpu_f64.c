/* cpu_f64: the double instance of the CPU operators and model, used by the gradient check. */
#include "cpu_kernels.h"

#include "canary_nvtx.h"
#include "model.h"

#include <tgmath.h>
#include <stdlib.h>
#include <string.h>

#define real double
#define CPU_FN(name) canary_cpu_##name##_f64
#define CPU_T(name) canary_cpu_##name##_f64

#include "cpu_ops.inc"
#include "cpu_model.inc"
