// CPU kernels of the fused optimizer updates: one pass over the variable, its slots and the gradient.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cmath>
#include <type_traits>
#include <vector>

#include "framework/core/parallel.h"
#include "framework/ops/cpu/half_convert.h"
#include "framework/ops/cpu/small_batch.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/functors.h"
#include "framework/ops/optimizer_ops.h"

namespace ember {
namespace {

// Elements [b, e) of one Adam step, into fresh outputs (apply_adam) or over the inputs (apply_adam_in_place:
// half the memory traffic, and the slots stay in cache between steps). Each element is read into registers
// and written once: with the functor working on the arrays through references, GCC reloaded m[i] right
// after storing v[i], and large slots share their address modulo 4 KiB (each is its own page-aligned
// mapping), so every such load waited on the store (4K aliasing): 4 ns an element instead of 1 on one
// thread. Element i is read only before it is written, so no iteration depends on another whether or not
// the outputs alias the inputs: ivdep lets GCC vectorize without the runtime overlap check, which sent the
// in-place case to the scalar loop. Vector lanes round exactly as the scalar operations do.
template <class T>
void adam_span(const T* w, const T* m, const T* v, const T* g, T* w_out, T* m_out, T* v_out, int64_t b, int64_t e,
               T alpha, T c1, T c2, T eps) {
#pragma GCC ivdep
  for (int64_t i = b; i < e; ++i) {
    T wi = w[i], mi = m[i], vi = v[i];
    functors::AdamStep{}(wi, mi, vi, g[i], alpha, c1, c2, eps);
    w_out[i] = wi;
    m_out[i] = mi;
    v_out[i] = vi;
  }
}

// adam_span on a float32 variable whose gradient is float16 or bfloat16 (a traced mixed-precision step hands the
// update the half gradient instead of its cast to float32: fold_gradient_casts): the gradient widened a block at a
// time into a buffer in L1, exactly as the cast would, then the float32 loop.
void adam_span_half_gradient(float* w, float* m, float* v, const void* g, DType g_dtype, int64_t b, int64_t e,
                             float alpha, float c1, float c2, float eps) {
  constexpr int64_t kBlock = 1024;
  float wide[kBlock];
  for (int64_t i = b; i < e; i += kBlock) {
    const int64_t len = std::min(kBlock, e - i);
    if (g_dtype == DType::BFloat16)
      cpu::to_compute_n(static_cast<const bfloat16*>(g) + i, wide, len);
    else
      cpu::to_compute_n(static_cast<const half*>(g) + i, wide, len);
    adam_span<float>(w + i, m + i, v + i, wide, w + i, m + i, v + i, 0, len, alpha, c1, c2, eps);
  }
}

// The learning rate tensor of a fused update (float32 or float64, checked by the front ends), as a double.
double learning_rate_of(const Tensor& lr) {
  return lr.dtype() == DType::Float32 ? static_cast<double>(*lr.data<float>()) : *lr.data<double>();
}

// AdamAttrs' coefficients rounded to T: alpha, 1 - beta_1, 1 - beta_2, epsilon.
template <class T>
std::array<T, 4> coefficients(const KernelContext& ctx) {
  const auto& a = std::get<AdamAttrs>(ctx.attrs);
  return {static_cast<T>(a.alpha), static_cast<T>(a.one_minus_beta_1), static_cast<T>(a.one_minus_beta_2),
          static_cast<T>(a.epsilon)};
}

// apply_adam_factored: the variable's rows split over the pool as matmul splits a small batch's products with
// it (small_batch.h), so each thread updates the rows whose forward product it made. Element (i, j)'s gradient
// is made in a register, K (the batch) a compile-time constant so the terms unroll and the columns vectorize:
// the first term rounded, then one fma per further term.
template <class T, int K>
void adam_factored_rows(const T* a, const T* b, T* w, T* m, T* v, int64_t rows, int64_t cols, int64_t begin,
                        int64_t end, T alpha, T c1, T c2, T eps) {
  for (int64_t i = begin; i < end; ++i) {
    T ap[K];
    for (int p = 0; p < K; ++p) ap[p] = a[p * rows + i];
    T* wr = w + i * cols;
    T* mr = m + i * cols;
    T* vr = v + i * cols;
#pragma GCC ivdep
    for (int64_t j = 0; j < cols; ++j) {
      T g = ap[0] * b[j];
      for (int p = 1; p < K; ++p) g = std::fma(ap[p], b[p * cols + j], g);
      T wi = wr[j], mi = mr[j], vi = vr[j];
      functors::AdamStep{}(wi, mi, vi, g, alpha, c1, c2, eps);
      wr[j] = wi;
      mr[j] = mi;
      vr[j] = vi;
    }
  }
}


// Rows [begin, end) of apply_adam_factored for factors of k rows (1 to ops::kFactoredMaxRows, checked by the front
// ends).
template <class T>
void adam_factored_span(const T* a, const T* b, T* w, T* m, T* v, int64_t k, int64_t rows, int64_t cols, int64_t begin,
                        int64_t end, T alpha, T c1, T c2, T eps) {
  static_assert(ops::kFactoredMaxRows == 8, "a case per row count");
  switch (k) {
    case 1: return adam_factored_rows<T, 1>(a, b, w, m, v, rows, cols, begin, end, alpha, c1, c2, eps);
    case 2: return adam_factored_rows<T, 2>(a, b, w, m, v, rows, cols, begin, end, alpha, c1, c2, eps);
    case 3: return adam_factored_rows<T, 3>(a, b, w, m, v, rows, cols, begin, end, alpha, c1, c2, eps);
    case 4: return adam_factored_rows<T, 4>(a, b, w, m, v, rows, cols, begin, end, alpha, c1, c2, eps);
    case 5: return adam_factored_rows<T, 5>(a, b, w, m, v, rows, cols, begin, end, alpha, c1, c2, eps);
    case 6: return adam_factored_rows<T, 6>(a, b, w, m, v, rows, cols, begin, end, alpha, c1, c2, eps);
    case 7: return adam_factored_rows<T, 7>(a, b, w, m, v, rows, cols, begin, end, alpha, c1, c2, eps);
    case 8: return adam_factored_rows<T, 8>(a, b, w, m, v, rows, cols, begin, end, alpha, c1, c2, eps);
    default: break;
  }
}

template <class T>
void adam_loop(const KernelContext& ctx) {
  const T* w = ctx.inputs[0].data<T>();
  const T* m = ctx.inputs[1].data<T>();
  const T* v = ctx.inputs[2].data<T>();
  const T* g = ctx.inputs[3].data<T>();
  T* w_out = ctx.outputs[0].data<T>();
  T* m_out = ctx.outputs[1].data<T>();
  T* v_out = ctx.outputs[2].data<T>();
  const auto [alpha, c1, c2, eps] = coefficients<T>(ctx);
  const int64_t n = ctx.inputs[0].num_elements();
  // apply_adam_in_place aliases all three outputs with their inputs, apply_adam none.
  auto body = [=](int64_t b, int64_t e) { adam_span<T>(w, m, v, g, w_out, m_out, v_out, b, e, alpha, c1, c2, eps); };
  // A few arithmetic operations per 16-28 bytes moved: worth threads only for large variables.
  if (n <= kParallelGrain)
    body(0, n);
  else
    parallel_for(n, kParallelGrain, body);
}

// Both kernels are registered for float32 and float64 only: the dispatcher refuses other dtypes.
void apply_adam_cpu(const KernelContext& ctx) {
  ctx.inputs[0].dtype() == DType::Float32 ? adam_loop<float>(ctx) : adam_loop<double>(ctx);
}
EMBER_REGISTER_KERNEL(apply_adam, CPU, apply_adam_cpu, DType::Float32, DType::Float64);

// apply_adam_multi: inputs (w, m, v) per variable, then (g, a, b) per variable (the gradient whole, or its factors
// a^T @ b), then the step, the condition and the learning rate; outputs (w, m, v) per variable, the inputs' own
// buffers. The step size is made once, as Adam makes it on the host (AdamStepSize's float math is
// optimizers::detail::Scalar's). Each variable is split as apply_adam (by elements) or apply_adam_factored (by
// rows) splits it alone, and all of them run in one parallel region: chunk t of every variable on thread t, so a
// thread keeps the rows it made in the forward pass and the pool is woken once per update, not once per variable.
template <class T>
void adam_multi_loop(const KernelContext& ctx) {
  const size_t n_vars = (ctx.inputs.size() - 3) / 6;
  const Tensor* grads = ctx.inputs.data() + 3 * n_vars;
  if (!*ctx.inputs[6 * n_vars + 1].data<bool>()) return;
  const auto& a = std::get<MultiAdamAttrs>(ctx.attrs);
  const double lr = learning_rate_of(ctx.inputs[6 * n_vars + 2]);
  // Keras casts the betas to float32 tensors before the powers (Scalar::cast), and computes 1 - beta in Python.
  const T t = static_cast<T>(*ctx.inputs[6 * n_vars].data<int64_t>() + 1);
  const T alpha = functors::AdamStepSize{}(static_cast<T>(lr), static_cast<T>(static_cast<float>(a.beta_1)),
                                           static_cast<T>(static_cast<float>(a.beta_2)), t);
  const T c1 = static_cast<T>(1 - a.beta_1), c2 = static_cast<T>(1 - a.beta_2), eps = static_cast<T>(a.epsilon);
  struct Part {
    T *w, *m, *v;
    const T *g, *a, *b;  // g, or the factors a (k, rows) and b (k, cols)
    const void* half_g;  // or a float16 / bfloat16 gradient of a float32 variable (fold_gradient_casts)
    DType half_dtype;
    int64_t n, rows, cols, k, chunks;
  };
  std::vector<Part> parts(n_vars);
  int64_t chunks = 1;
  for (size_t i = 0; i < n_vars; ++i) {
    Part& p = parts[i];
    p.w = ctx.outputs[3 * i].data<T>();
    p.m = ctx.outputs[3 * i + 1].data<T>();
    p.v = ctx.outputs[3 * i + 2].data<T>();
    p.n = ctx.outputs[3 * i].num_elements();
    const bool factored = !grads[3 * i].defined();
    const bool half = !factored && grads[3 * i].dtype() != ctx.outputs[3 * i].dtype();
    EMBER_CHECK(!half || (std::is_same_v<T, float> && (grads[3 * i].dtype() == DType::BFloat16 ||
                                                       grads[3 * i].dtype() == DType::Float16)),
                InvalidArgument)
        << "apply_adam_multi: variable " << i << " is " << ctx.outputs[3 * i].dtype() << " and its gradient "
        << grads[3 * i].dtype() << "; expected the variable's dtype, or float16 or bfloat16 for a float32 variable";
    p.half_g = half ? grads[3 * i].raw_data() : nullptr;
    p.half_dtype = half ? grads[3 * i].dtype() : DType::Float32;
    p.g = factored || half ? nullptr : grads[3 * i].data<T>();
    p.a = factored ? grads[3 * i + 1].data<T>() : nullptr;
    p.b = factored ? grads[3 * i + 2].data<T>() : nullptr;
    p.rows = factored ? ctx.outputs[3 * i].shape()[0] : 0;
    p.cols = factored ? ctx.outputs[3 * i].shape()[1] : 0;
    p.k = factored ? grads[3 * i + 1].shape()[0] : 0;
    // apply_adam's and apply_adam_factored's splits, as each would make it alone.
    p.chunks = p.n <= kParallelGrain ? 1 : factored ? parallel_chunks(p.rows, cpu::kSplitMinRows)
                                                    : parallel_chunks(p.n, kParallelGrain);
    chunks = std::max(chunks, p.chunks);
  }
  parallel_for_chunks(chunks, 1, [&](int64_t chunk, int64_t, int64_t) {
    for (const Part& p : parts) {
      if (chunk >= p.chunks) continue;
      if (p.g) {
        adam_span<T>(p.w, p.m, p.v, p.g, p.w, p.m, p.v, p.n * chunk / p.chunks, p.n * (chunk + 1) / p.chunks, alpha,
                     c1, c2, eps);
      } else if (p.half_g) {
        if constexpr (std::is_same_v<T, float>)
          adam_span_half_gradient(p.w, p.m, p.v, p.half_g, p.half_dtype, p.n * chunk / p.chunks,
                                  p.n * (chunk + 1) / p.chunks, alpha, c1, c2, eps);
      } else {
        adam_factored_span<T>(p.a, p.b, p.w, p.m, p.v, p.k, p.rows, p.cols, p.rows * chunk / p.chunks,
                              p.rows * (chunk + 1) / p.chunks, alpha, c1, c2, eps);
      }
    }
  });
}

void apply_adam_multi_cpu(const KernelContext& ctx) {
  ctx.outputs[0].dtype() == DType::Float32 ? adam_multi_loop<float>(ctx) : adam_multi_loop<double>(ctx);
}
EMBER_REGISTER_KERNEL(apply_adam_multi, CPU, apply_adam_multi_cpu, DType::Float32, DType::Float64);

// apply_sgd_multi: inputs (w, m) per variable, (w) without momentum, then the gradients, the condition and the
// learning rate; outputs (w, m) or (w) per variable, the inputs' own buffers.
template <class T>
void sgd_multi_loop(const KernelContext& ctx) {
  const auto& a = std::get<MultiSgdAttrs>(ctx.attrs);
  const bool has_momentum = a.momentum != 0, nesterov = a.nesterov;
  const size_t group = has_momentum ? 2 : 1, n_vars = ctx.outputs.size() / group;
  if (!*ctx.inputs[ctx.inputs.size() - 2].data<bool>()) return;
  // SGD's host scalars: the learning rate in T, the momentum cast to float32 first (Keras's ops.cast).
  const T lr = static_cast<T>(learning_rate_of(ctx.inputs.back())), momentum = static_cast<T>(static_cast<float>(a.momentum));
  for (size_t k = 0; k < n_vars; ++k) {
    T* w = ctx.outputs[group * k].data<T>();
    T* m = has_momentum ? ctx.outputs[2 * k + 1].data<T>() : nullptr;
    const T* g = ctx.inputs[group * n_vars + k].data<T>();
    const int64_t n = ctx.outputs[group * k].num_elements();
    auto body = [=](int64_t b, int64_t e) {
      T unused = 0;
#pragma GCC ivdep
      for (int64_t i = b; i < e; ++i) {
        T wi = w[i], mi = has_momentum ? m[i] : unused;
        functors::SgdStep{}(wi, mi, g[i], lr, momentum, has_momentum, nesterov);
        w[i] = wi;
        if (has_momentum) m[i] = mi;
      }
    };
    if (n <= kParallelGrain)
      body(0, n);
    else
      parallel_for(n, kParallelGrain, body);
  }
}

void apply_sgd_multi_cpu(const KernelContext& ctx) {
  ctx.outputs[0].dtype() == DType::Float32 ? sgd_multi_loop<float>(ctx) : sgd_multi_loop<double>(ctx);
}
EMBER_REGISTER_KERNEL(apply_sgd_multi, CPU, apply_sgd_multi_cpu, DType::Float32, DType::Float64);

// apply_adam_factored: the variable's rows split over the pool as apply_adam_multi splits a factored variable.
template <class T>
void adam_factored(const KernelContext& ctx) {
  const T* a = ctx.inputs[3].data<T>();
  const T* b = ctx.inputs[4].data<T>();
  T* w = ctx.outputs[0].data<T>();
  T* m = ctx.outputs[1].data<T>();
  T* v = ctx.outputs[2].data<T>();
  const auto [alpha, c1, c2, eps] = coefficients<T>(ctx);
  const int64_t k = ctx.inputs[3].shape()[0];  // 1 to ops::kFactoredMaxRows, checked by apply_adam_factored_in_place
  const int64_t rows = ctx.outputs[0].shape()[0], cols = ctx.outputs[0].shape()[1];
  auto body = [=](int64_t, int64_t begin, int64_t end) {
    adam_factored_span<T>(a, b, w, m, v, k, rows, cols, begin, end, alpha, c1, c2, eps);
  };
  if (rows * cols <= kParallelGrain)
    body(0, 0, rows);
  else
    parallel_for_chunks(rows, cpu::kSplitMinRows, body);
}

void apply_adam_factored_cpu(const KernelContext& ctx) {
  if (ctx.outputs[0].num_elements() == 0) return;
  ctx.inputs[0].dtype() == DType::Float32 ? adam_factored<float>(ctx) : adam_factored<double>(ctx);
}
EMBER_REGISTER_KERNEL(apply_adam_factored, CPU, apply_adam_factored_cpu, DType::Float32, DType::Float64);

}  // namespace

}  // namespace ember
