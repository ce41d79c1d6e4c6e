// CPU kernels of the fused optimizer updates: one pass over the variable, its slots and the gradient.
#include "framework/core/parallel.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/functors.h"

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

template <class T>
void adam_loop(const KernelContext& ctx) {
  const auto& a = std::get<AdamAttrs>(ctx.attrs);
  const T* w = ctx.inputs[0].data<T>();
  const T* m = ctx.inputs[1].data<T>();
  const T* v = ctx.inputs[2].data<T>();
  const T* g = ctx.inputs[3].data<T>();
  T* w_out = ctx.outputs[0].data<T>();
  T* m_out = ctx.outputs[1].data<T>();
  T* v_out = ctx.outputs[2].data<T>();
  const T alpha = static_cast<T>(a.alpha), c1 = static_cast<T>(a.one_minus_beta_1),
          c2 = static_cast<T>(a.one_minus_beta_2), eps = static_cast<T>(a.epsilon);
  const int64_t n = ctx.inputs[0].num_elements();
  // apply_adam_in_place aliases all three outputs with their inputs, apply_adam none.
  auto body = [=](int64_t b, int64_t e) { adam_span<T>(w, m, v, g, w_out, m_out, v_out, b, e, alpha, c1, c2, eps); };
  // A few arithmetic operations per 16-28 bytes moved: worth threads only for large variables.
  if (n <= kParallelGrain)
    body(0, n);
  else
    parallel_for(n, kParallelGrain, body);
}

void apply_adam_cpu(const KernelContext& ctx) {
  switch (ctx.inputs[0].dtype()) {
    case DType::Float32: return adam_loop<float>(ctx);
    case DType::Float64: return adam_loop<double>(ctx);
    default: break;
  }
  throw InvalidArgument(std::string("apply_adam: dtype ") + dtype_name(ctx.inputs[0].dtype()) +
                        " is not supported (expected float32 or float64)");
}
EMBER_REGISTER_KERNEL(apply_adam, CPU, apply_adam_cpu, DType::Float32, DType::Float64);

}  // namespace
}  // namespace ember
