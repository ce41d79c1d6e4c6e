// CPU kernels of the fused optimizer updates: one pass over the variable, its slots and the gradient.
#include <array>
#include <atomic>
#include <cstdint>
#include <cmath>

#include "framework/core/parallel.h"
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

// AdamAttrs' coefficients rounded to T: alpha, 1 - beta_1, 1 - beta_2, epsilon.
template <class T>
std::array<T, 4> coefficients(const KernelContext& ctx) {
  const auto& a = std::get<AdamAttrs>(ctx.attrs);
  return {static_cast<T>(a.alpha), static_cast<T>(a.one_minus_beta_1), static_cast<T>(a.one_minus_beta_2),
          static_cast<T>(a.epsilon)};
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

// apply_adam_multi: inputs (w, m, v, g) per variable, then the step and the condition; outputs (w, m, v) per variable, the
// inputs' own buffers. The step size is made once, as Adam makes it on the host (AdamStepSize's float math is
// optimizers::detail::Scalar's), and each variable runs apply_adam's loop.
template <class T>
void adam_multi_loop(const KernelContext& ctx) {
  const size_t n_vars = ctx.outputs.size() / 3;
  if (!*ctx.inputs[4 * n_vars + 1].data<bool>()) return;
  const auto& a = std::get<MultiAdamAttrs>(ctx.attrs);
  // Keras casts the betas to float32 tensors before the powers (Scalar::cast), and computes 1 - beta in Python.
  const T t = static_cast<T>(*ctx.inputs[4 * n_vars].data<int64_t>() + 1);
  const T alpha = functors::AdamStepSize{}(static_cast<T>(a.learning_rate), static_cast<T>(static_cast<float>(a.beta_1)),
                                           static_cast<T>(static_cast<float>(a.beta_2)), t);
  const T c1 = static_cast<T>(1 - a.beta_1), c2 = static_cast<T>(1 - a.beta_2), eps = static_cast<T>(a.epsilon);
  for (size_t k = 0; k < n_vars; ++k) {
    T* w = ctx.outputs[3 * k].data<T>();
    T* m = ctx.outputs[3 * k + 1].data<T>();
    T* v = ctx.outputs[3 * k + 2].data<T>();
    const T* g = ctx.inputs[4 * k + 3].data<T>();
    const int64_t n = ctx.outputs[3 * k].num_elements();
    auto body = [=](int64_t b, int64_t e) { adam_span<T>(w, m, v, g, w, m, v, b, e, alpha, c1, c2, eps); };
    if (n <= kParallelGrain)
      body(0, n);
    else
      parallel_for(n, kParallelGrain, body);
  }
}

void apply_adam_multi_cpu(const KernelContext& ctx) {
  ctx.outputs[0].dtype() == DType::Float32 ? adam_multi_loop<float>(ctx) : adam_multi_loop<double>(ctx);
}
EMBER_REGISTER_KERNEL(apply_adam_multi, CPU, apply_adam_multi_cpu, DType::Float32, DType::Float64);

// apply_sgd_multi: inputs (w, m, g) per variable, (w, g) without momentum, then the condition; outputs (w, m) or
// (w) per variable, the inputs' own buffers.
template <class T>
void sgd_multi_loop(const KernelContext& ctx) {
  if (!*ctx.inputs.back().data<bool>()) return;
  const auto& a = std::get<MultiSgdAttrs>(ctx.attrs);
  const bool has_momentum = a.momentum != 0, nesterov = a.nesterov;
  const size_t group = has_momentum ? 3 : 2, n_vars = (ctx.inputs.size() - 1) / group;
  // SGD's host scalars: the learning rate in T, the momentum cast to float32 first (Keras's ops.cast).
  const T lr = static_cast<T>(a.learning_rate), momentum = static_cast<T>(static_cast<float>(a.momentum));
  for (size_t k = 0; k < n_vars; ++k) {
    T* w = ctx.outputs[(group - 1) * k].data<T>();
    T* m = has_momentum ? ctx.outputs[2 * k + 1].data<T>() : nullptr;
    const T* g = ctx.inputs[group * k + group - 1].data<T>();
    const int64_t n = ctx.outputs[(group - 1) * k].num_elements();
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

template <class T, int K>
void adam_factored_loop(const KernelContext& ctx) {
  const T* a = ctx.inputs[3].data<T>();
  const T* b = ctx.inputs[4].data<T>();
  T* w = ctx.outputs[0].data<T>();
  T* m = ctx.outputs[1].data<T>();
  T* v = ctx.outputs[2].data<T>();
  const auto [alpha, c1, c2, eps] = coefficients<T>(ctx);
  const int64_t rows = ctx.outputs[0].shape()[0], cols = ctx.outputs[0].shape()[1];
  auto body = [=](int64_t, int64_t begin, int64_t end) {
    adam_factored_rows<T, K>(a, b, w, m, v, rows, cols, begin, end, alpha, c1, c2, eps);
  };
  if (rows * cols <= kParallelGrain)
    body(0, 0, rows);
  else
    parallel_for_chunks(rows, cpu::kSplitMinRows, body);
}

template <class T>
void adam_factored(const KernelContext& ctx) {
  static_assert(ops::kFactoredMaxRows == 8, "a case per row count");
  switch (ctx.inputs[3].shape()[0]) {  // 1 to ops::kFactoredMaxRows, checked by apply_adam_factored_in_place
    case 1: return adam_factored_loop<T, 1>(ctx);
    case 2: return adam_factored_loop<T, 2>(ctx);
    case 3: return adam_factored_loop<T, 3>(ctx);
    case 4: return adam_factored_loop<T, 4>(ctx);
    case 5: return adam_factored_loop<T, 5>(ctx);
    case 6: return adam_factored_loop<T, 6>(ctx);
    case 7: return adam_factored_loop<T, 7>(ctx);
    case 8: return adam_factored_loop<T, 8>(ctx);
    default: break;
  }
  throw make_error<InvalidArgument>("apply_adam_factored: the factors have ", ctx.inputs[3].shape()[0],
                                    " rows; expected 1 to 8");
}

void apply_adam_factored_cpu(const KernelContext& ctx) {
  if (ctx.outputs[0].num_elements() == 0) return;
  ctx.inputs[0].dtype() == DType::Float32 ? adam_factored<float>(ctx) : adam_factored<double>(ctx);
}
EMBER_REGISTER_KERNEL(apply_adam_factored, CPU, apply_adam_factored_cpu, DType::Float32, DType::Float64);

}  // namespace

namespace {

// unscale_gradient: out = g / scale, element by element (ops::div's values); the finite flag as an OR of
// (v - v != 0), which is set by an infinity or a NaN and vectorises with the division.
template <class T>
void unscale_loop(const KernelContext& ctx) {
  const T* g = ctx.inputs[0].data<T>();
  const T scale = *ctx.inputs[1].data<T>();
  const bool finite_in = *ctx.inputs[2].data<bool>();
  T* out = ctx.outputs[0].data<T>();
  const int64_t n = ctx.inputs[0].num_elements();
  std::atomic<bool> bad{false};
  auto body = [&](int64_t b, int64_t e) {
    int32_t any = 0;
    for (int64_t i = b; i < e; ++i) {
      const T v = g[i];
      out[i] = v / scale;
      any |= static_cast<int32_t>(v - v != T(0));
    }
    if (any) bad.store(true, std::memory_order_relaxed);
  };
  if (n <= kParallelGrain)
    body(0, n);
  else
    parallel_for(n, kParallelGrain, body);
  *ctx.outputs[1].data<bool>() = finite_in && !bad.load();
}

void unscale_gradient_cpu(const KernelContext& ctx) {
  switch (ctx.inputs[0].dtype()) {
    case DType::Float32: return unscale_loop<float>(ctx);
    case DType::Float64: return unscale_loop<double>(ctx);
    default: throw make_error<InvalidArgument>("unscale_gradient: dtype ", ctx.inputs[0].dtype(), " is not supported");
  }
}

}  // namespace

EMBER_REGISTER_KERNEL(unscale_gradient, CPU, unscale_gradient_cpu, DType::Float32, DType::Float64);

}  // namespace ember
