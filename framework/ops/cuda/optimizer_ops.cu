// CUDA kernel of the fused Adam update. It must round every operation exactly as the unfused ops (and the
// CPU kernel, compiled with -ffp-contract=off) do, for Keras parity to the last bit. nvcc contracts a * b + c
// into an FMA by default (-fmad=true), so instead of calling functors::AdamStep the kernel spells the same
// formula with the round-to-nearest intrinsics (__fadd_rn, __fmul_rn, ...), which nvcc never fuses: no
// compiler flag is needed, and -fmad or --use_fast_math settings cannot change the result.
#include <cstdint>

#include "framework/ops/cuda/cuda_runtime.h"
#include "framework/ops/cuda/cuda_types.cuh"
#include "framework/ops/cuda/optimizer_ops_launch.h"
#include "framework/ops/functors.h"

namespace ember::cuda {
namespace {

// Separately rounded arithmetic of T, one overload set per floating type.
struct OptRn {
  static __device__ __forceinline__ float add(float a, float b) { return __fadd_rn(a, b); }
  static __device__ __forceinline__ float sub(float a, float b) { return __fsub_rn(a, b); }
  static __device__ __forceinline__ float mul(float a, float b) { return __fmul_rn(a, b); }
  static __device__ __forceinline__ float div(float a, float b) { return __fdiv_rn(a, b); }
  static __device__ __forceinline__ float sqrt(float a) { return __fsqrt_rn(a); }
  static __device__ __forceinline__ float fma(float a, float b, float c) { return __fmaf_rn(a, b, c); }
  static __device__ __forceinline__ double add(double a, double b) { return __dadd_rn(a, b); }
  static __device__ __forceinline__ double sub(double a, double b) { return __dsub_rn(a, b); }
  static __device__ __forceinline__ double mul(double a, double b) { return __dmul_rn(a, b); }
  static __device__ __forceinline__ double div(double a, double b) { return __ddiv_rn(a, b); }
  static __device__ __forceinline__ double sqrt(double a) { return __dsqrt_rn(a); }
  static __device__ __forceinline__ double fma(double a, double b, double c) { return __fma_rn(a, b, c); }
};

// functors::AdamStep, operation for operation:
//   m = m + (g - m) * c1;  v = v + (g * g - v) * c2;  w = w - (m * alpha) / (sqrt(v) + epsilon).
template <class T>
__device__ __forceinline__ void adam_step_rn(T g, T& w, T& m, T& v, T alpha, T c1, T c2, T epsilon) {
  using R = OptRn;
  m = R::add(m, R::mul(R::sub(g, m), c1));
  v = R::add(v, R::mul(R::sub(R::mul(g, g), v), c2));
  w = R::sub(w, R::div(R::mul(m, alpha), R::add(R::sqrt(v), epsilon)));
}

template <class T>
__global__ void opt_adam_kernel(const T* w, const T* m, const T* v, const T* __restrict__ g, T* w_out, T* m_out,
                                T* v_out, int64_t n, T alpha, T c1, T c2, T epsilon) {
  EMBER_CUDA_GRID_STRIDE_LOOP(i, n) {
    T wi = w[i], mi = m[i], vi = v[i];
    adam_step_rn(g[i], wi, mi, vi, alpha, c1, c2, epsilon);
    w_out[i] = wi;
    m_out[i] = mi;
    v_out[i] = vi;
  }
}

// apply_adam_factored, in place: element (i, j)'s gradient is column i of a (k x rows) times column j of b
// (k x cols), the first term rounded, then one fused multiply-add per further term (the CPU kernel's order).
template <class T>
__global__ void opt_adam_factored_kernel(T* w, T* m, T* v, const T* __restrict__ a, const T* __restrict__ b, int64_t k,
                                         int64_t rows, int64_t cols, T alpha, T c1, T c2, T epsilon) {
  using R = OptRn;
  EMBER_CUDA_GRID_STRIDE_LOOP(idx, rows * cols) {
    const int64_t i = idx / cols, j = idx % cols;
    T g = R::mul(a[i], b[j]);
    for (int64_t p = 1; p < k; ++p) g = R::fma(a[p * rows + i], b[p * cols + j], g);
    T wi = w[idx], mi = m[idx], vi = v[idx];
    adam_step_rn(g, wi, mi, vi, alpha, c1, c2, epsilon);
    w[idx] = wi;
    m[idx] = mi;
    v[idx] = vi;
  }
}

// Up to kMultiAdamMaxVars variables of one apply_adam_multi launch, passed by value as a kernel parameter (under
// 1 KiB; PyTorch's multi_tensor_apply does the same): their buffers and the running totals of their sizes.
template <class T>
struct AdamBatch {
  T* w[kMultiAdamMaxVars];
  T* m[kMultiAdamMaxVars];
  T* v[kMultiAdamMaxVars];
  const T* g[kMultiAdamMaxVars];
  int64_t end[kMultiAdamMaxVars];  // end[k]: the elements of variables 0..k together
  int count;
};

// One grid-stride loop over the batch's elements laid end to end; a thread's indices only grow, so the variable
// it is in is found by moving forward. Each thread makes the step size itself (functors::AdamStepSize: a few
// operations, no multiply-add to contract), rather than waiting on another kernel or a host value.
template <class T>
__global__ void opt_adam_multi_kernel(AdamBatch<T> b, const int64_t* __restrict__ step,
                                      const bool* __restrict__ condition, const void* __restrict__ learning_rate,
                                      bool learning_rate_double, T beta_1, T beta_2, T c1, T c2, T epsilon) {
  if (!*condition) return;
  // The CPU kernel's rounding: the rate widened to double, then rounded to T.
  const double lr = learning_rate_double ? *static_cast<const double*>(learning_rate)
                                         : static_cast<double>(*static_cast<const float*>(learning_rate));
  const T alpha = functors::AdamStepSize{}(static_cast<T>(lr), beta_1, beta_2, static_cast<T>(*step + 1));
  int k = 0;
  EMBER_CUDA_GRID_STRIDE_LOOP(i, b.end[b.count - 1]) {
    while (i >= b.end[k]) ++k;
    const int64_t j = i - (k > 0 ? b.end[k - 1] : 0);
    T wi = b.w[k][j], mi = b.m[k][j], vi = b.v[k][j];
    adam_step_rn(b.g[k][j], wi, mi, vi, alpha, c1, c2, epsilon);
    b.w[k][j] = wi;
    b.m[k][j] = mi;
    b.v[k][j] = vi;
  }
}

// apply_sgd_multi's batch: as AdamBatch, with the momentum slots (null without momentum).
template <class T>
struct SgdBatch {
  T* w[kMultiAdamMaxVars];
  T* m[kMultiAdamMaxVars];
  const T* g[kMultiAdamMaxVars];
  int64_t end[kMultiAdamMaxVars];
  int count;
};

// functors::SgdStep, operation for operation, with separately rounded arithmetic (no multiply-add contraction).
template <class T>
__global__ void opt_sgd_multi_kernel(SgdBatch<T> b, const bool* __restrict__ condition,
                                     const void* __restrict__ learning_rate, bool learning_rate_double, T momentum,
                                     bool has_momentum, bool nesterov) {
  using R = OptRn;
  if (!*condition) return;
  // The CPU kernel's rounding: the rate widened to double, then rounded to T.
  const T lr = static_cast<T>(learning_rate_double ? *static_cast<const double*>(learning_rate)
                                                   : static_cast<double>(*static_cast<const float*>(learning_rate)));
  int k = 0;
  EMBER_CUDA_GRID_STRIDE_LOOP(i, b.end[b.count - 1]) {
    while (i >= b.end[k]) ++k;
    const int64_t j = i - (k > 0 ? b.end[k - 1] : 0);
    const T g = b.g[k][j], step = R::mul(g, lr);
    if (!has_momentum) {
      b.w[k][j] = R::sub(b.w[k][j], step);
      continue;
    }
    const T m = R::sub(R::mul(b.m[k][j], momentum), step);
    b.m[k][j] = m;
    b.w[k][j] = nesterov ? R::add(b.w[k][j], R::sub(R::mul(m, momentum), step)) : R::add(b.w[k][j], m);
  }
}

// unscale_gradients: up to kMultiAdamMaxVars gradients of any floating dtype per launch, laid end to end as
// AdamBatch's variables are; each element divided by the float32 scale (widened for float64), the half types
// widened exactly first. *finite starts true (unscale_flag_kernel, launched first on the stream), and a thread
// that meets an infinity or a NaN clears it (every writer stores the same false).
struct UnscaleBatch {
  const void* in[kMultiAdamMaxVars];
  void* out[kMultiAdamMaxVars];
  int64_t end[kMultiAdamMaxVars];
  DT dt[kMultiAdamMaxVars];
  int count;
};

__global__ void unscale_flag_kernel(bool* finite) { *finite = true; }

template <class T>
__device__ __forceinline__ bool unscale_element(const UnscaleBatch& b, int k, int64_t j, compute_t<T> s) {
  const compute_t<T> v = load(static_cast<const T*>(b.in[k]), j);
  static_cast<compute_t<T>*>(b.out[k])[j] = OptRn::div(v, s);
  return isfinite(v);
}

__global__ void unscale_multi_kernel(UnscaleBatch b, const float* __restrict__ scale, bool* finite) {
  const float s = *scale;
  int k = 0;
  EMBER_CUDA_GRID_STRIDE_LOOP(i, b.end[b.count - 1]) {
    while (i >= b.end[k]) ++k;
    const int64_t j = i - (k > 0 ? b.end[k - 1] : 0);
    bool ok;
    switch (b.dt[k]) {
      case DT::F16: ok = unscale_element<__half>(b, k, j, s); break;
      case DT::BF16: ok = unscale_element<__nv_bfloat16>(b, k, j, s); break;
      case DT::F64: ok = unscale_element<double>(b, k, j, static_cast<double>(s)); break;
      default: ok = unscale_element<float>(b, k, j, s); break;
    }
    if (!ok) *finite = false;
  }
}

// update_loss_scale on one thread: the CPU kernel's arithmetic (doubling and halving are exact).
__global__ void update_loss_scale_kernel(const float* scale, const int64_t* counter, const bool* finite,
                                         int64_t growth_steps, float* scale_out, int64_t* counter_out) {
  const float s = *scale;
  const int64_t c = *counter;
  const bool ok = *finite, grow = ok && c + 1 == growth_steps;
  *scale_out = !ok ? __fmul_rn(s, 0.5f) : grow ? __fmul_rn(s, 2.0f) : s;
  *counter_out = ok && !grow ? c + 1 : 0;
}

// Calls f with a value of the C++ type of dt (float or double); false for another dtype.
template <class F>
bool with_float_type(DT dt, F&& f) {
  switch (dt) {
    case DT::F32: f(float{}); return true;
    case DT::F64: f(double{}); return true;
    default: return false;
  }
}

}  // namespace

bool launch_apply_adam(DT dt, const void* w, const void* m, const void* v, const void* g, void* w_out, void* m_out,
                       void* v_out, int64_t n, double alpha, double one_minus_beta_1, double one_minus_beta_2,
                       double epsilon, cudaStream_t stream) {
  return with_float_type(dt, [&](auto zero) {
    using T = decltype(zero);
    opt_adam_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(
        static_cast<const T*>(w), static_cast<const T*>(m), static_cast<const T*>(v), static_cast<const T*>(g),
        static_cast<T*>(w_out), static_cast<T*>(m_out), static_cast<T*>(v_out), n, static_cast<T>(alpha),
        static_cast<T>(one_minus_beta_1), static_cast<T>(one_minus_beta_2), static_cast<T>(epsilon));
  });
}

bool launch_apply_adam_factored(DT dt, void* w, void* m, void* v, const void* a, const void* b, int64_t k, int64_t rows,
                                int64_t cols, double alpha, double one_minus_beta_1, double one_minus_beta_2,
                                double epsilon, cudaStream_t stream) {
  return with_float_type(dt, [&](auto zero) {
    using T = decltype(zero);
    opt_adam_factored_kernel<T><<<blocks_for(rows * cols), kThreads, 0, stream>>>(
        static_cast<T*>(w), static_cast<T*>(m), static_cast<T*>(v), static_cast<const T*>(a), static_cast<const T*>(b),
        k, rows, cols, static_cast<T>(alpha), static_cast<T>(one_minus_beta_1), static_cast<T>(one_minus_beta_2),
        static_cast<T>(epsilon));
  });
}

bool launch_apply_adam_multi(DT dt, int count, void* const* w, void* const* m, void* const* v, const void* const* g,
                             const int64_t* n, const int64_t* step, const bool* condition, const void* learning_rate,
                             bool learning_rate_double, double beta_1, double beta_2, double epsilon,
                             cudaStream_t stream) {
  return with_float_type(dt, [&](auto zero) {
    using T = decltype(zero);
    // The coefficients in T as the CPU kernel rounds them: Keras casts the betas to float32 before the powers.
    const T b1 = static_cast<T>(static_cast<float>(beta_1)),
            b2 = static_cast<T>(static_cast<float>(beta_2)), c1 = static_cast<T>(1 - beta_1),
            c2 = static_cast<T>(1 - beta_2), eps = static_cast<T>(epsilon);
    for (int k = 0; k < count;) {
      AdamBatch<T> b{};
      int64_t total = 0;
      for (; k < count && b.count < kMultiAdamMaxVars; ++k) {
        if (n[k] == 0) continue;
        b.w[b.count] = static_cast<T*>(w[k]);
        b.m[b.count] = static_cast<T*>(m[k]);
        b.v[b.count] = static_cast<T*>(v[k]);
        b.g[b.count] = static_cast<const T*>(g[k]);
        total += n[k];
        b.end[b.count++] = total;
      }
      if (b.count == 0) continue;
      opt_adam_multi_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(b, step, condition, learning_rate,
                                                                             learning_rate_double, b1, b2, c1, c2, eps);
    }
  });
}

bool launch_apply_sgd_multi(DT dt, int count, void* const* w, void* const* m, const void* const* g, const int64_t* n,
                            const bool* condition, const void* learning_rate, bool learning_rate_double,
                            double momentum, bool nesterov, cudaStream_t stream) {
  return with_float_type(dt, [&](auto zero) {
    using T = decltype(zero);
    const T mom = static_cast<T>(static_cast<float>(momentum));
    for (int k = 0; k < count;) {
      SgdBatch<T> b{};
      int64_t total = 0;
      for (; k < count && b.count < kMultiAdamMaxVars; ++k) {
        if (n[k] == 0) continue;
        b.w[b.count] = static_cast<T*>(w[k]);
        b.m[b.count] = static_cast<T*>(m[k]);
        b.g[b.count] = static_cast<const T*>(g[k]);
        total += n[k];
        b.end[b.count++] = total;
      }
      if (b.count == 0) continue;
      opt_sgd_multi_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(b, condition, learning_rate,
                                                                            learning_rate_double, mom, momentum != 0,
                                                                            nesterov);
    }
  });
}

void launch_unscale_gradients(int count, const DT* dt, const void* const* in, void* const* out, const int64_t* n,
                              const float* scale, bool* finite, cudaStream_t stream) {
  unscale_flag_kernel<<<1, 1, 0, stream>>>(finite);
  for (int k = 0; k < count;) {
    UnscaleBatch b{};
    int64_t total = 0;
    for (; k < count && b.count < kMultiAdamMaxVars; ++k) {
      if (n[k] == 0) continue;
      b.in[b.count] = in[k];
      b.out[b.count] = out[k];
      b.dt[b.count] = dt[k];
      total += n[k];
      b.end[b.count++] = total;
    }
    if (b.count == 0) continue;
    unscale_multi_kernel<<<blocks_for(total), kThreads, 0, stream>>>(b, scale, finite);
  }
}

void launch_update_loss_scale(const float* scale, const int64_t* counter, const bool* finite, int64_t growth_steps,
                              float* scale_out, int64_t* counter_out, cudaStream_t stream) {
  update_loss_scale_kernel<<<1, 1, 0, stream>>>(scale, counter, finite, growth_steps, scale_out, counter_out);
}

}  // namespace ember::cuda
