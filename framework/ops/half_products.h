#pragma once
// Internal: how the CPU's half-precision products compute, for the graph compiler.
#include "framework/core/dtype.h"

namespace ember::ops {

// Whether the CPU's matmul and matmul_bias of `dtype` run as float32's: the operands widened to float32, float32's
// kernel at the same geometry, the product rounded once to `dtype` (matmul_bias then adds its bias and relus as the
// half elementwise ops would). Float16 always (oneDNN has no f16 matmul on CPUs); bfloat16 where oneDNN's native bf16
// kernels are not in use (they would not beat float32 on this CPU, or are switched off). The graph compiler's
// store_half_in_float32 relies on it.
bool cpu_matmul_widens_half(DType dtype);

}  // namespace ember::ops
