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

// The same step in place, with the gradient given as the factors a (k x rows) and b (k x cols) of a^T @ b for a
// rows x cols variable (apply_adam_factored_in_place); false for another dtype.
bool launch_apply_adam_factored(DT dt, void* w, void* m, void* v, const void* a, const void* b, int64_t k, int64_t rows,
                                int64_t cols, double alpha, double one_minus_beta_1, double one_minus_beta_2,
                                double epsilon, cudaStream_t stream);

// apply_adam_multi over `count` variables of dt (F32 or F64), in place: variable k has n[k] elements at w[k],
// m[k], v[k] with its gradient at g[k]. The step size is made on the device from *step (device memory: the
// count of earlier updates) and *learning_rate (device memory: a double, or a float when learning_rate_double is
// false), and nothing is written unless *condition (device memory) is true. One kernel per kMultiAdamMaxVars
// variables; false for another dtype.
inline constexpr int kMultiAdamMaxVars = 24;
bool launch_apply_adam_multi(DT dt, int count, void* const* w, void* const* m, void* const* v, const void* const* g,
                             const int64_t* n, const int64_t* step, const bool* condition, const void* learning_rate,
                             bool learning_rate_double, double beta_1, double beta_2, double epsilon,
                             cudaStream_t stream);

// apply_sgd_multi over `count` variables of dt (F32 or F64), in place: w[k], m[k] (null without momentum, when
// momentum is 0) and g[k] of n[k] elements, where *condition (device memory) is true, at the rate
// *learning_rate (device memory: a double, or a float when learning_rate_double is false). One kernel per
// kMultiAdamMaxVars variables; false for another dtype.
bool launch_apply_sgd_multi(DT dt, int count, void* const* w, void* const* m, const void* const* g, const int64_t* n,
                            const bool* condition, const void* learning_rate, bool learning_rate_double,
                            double momentum, bool nesterov, cudaStream_t stream);

// unscale_gradients over `count` gradients of dtypes dt (F16, BF16, F32, F64) with n[k] elements: out[k] = in[k]
// widened (F32 for the half types) / *scale (float32, widened for F64; separately rounded, as ops::div), and
// *finite = every element finite. One kernel per kMultiAdamMaxVars gradients after one that sets the flag.
void launch_unscale_gradients(int count, const DT* dt, const void* const* in, void* const* out, const int64_t* n,
                              const float* scale, bool* finite, cudaStream_t stream);

// update_loss_scale (one thread): the next scale and counter from *scale, *counter and *finite.
void launch_update_loss_scale(const float* scale, const int64_t* counter, const bool* finite, int64_t growth_steps,
                              float* scale_out, int64_t* counter_out, cudaStream_t stream);

}  // namespace ember::cuda
