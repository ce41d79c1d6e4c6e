#pragma once
// Host launcher of the fused optimizer update kernels (optimizer_ops.cu). C++17-clean.
#include <cstdint>

#include "framework/ops/cuda/cuda_dt.h"
#include "framework/ops/cuda/cuda_runtime.h"

namespace ember::cuda {

// Keras's Adam step over n elements (functors::AdamStep's formula) for F32 and F64, reading w, m, v, g and
// writing the new values to w_out, m_out, v_out (which may alias the inputs element for element). The
// coefficients hold values already rounded to dt. Enqueues one kernel on `stream`; false for another dtype.
bool launch_apply_adam(DT dt, const void* w, const void* m, const void* v, const void* g, void* w_out, void* m_out,
                       void* v_out, int64_t n, double alpha, double one_minus_beta_1, double one_minus_beta_2,
                       double epsilon, cudaStream_t stream);

}  // namespace ember::cuda
