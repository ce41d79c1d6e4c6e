// CPU kernels of the fused optimizer updates: one pass over the variable, its slots and the gradient.
#include "framework/core/parallel.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/functors.h"

namespace ember {
namespace {

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
  auto body = [=](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      T wi = w[i], mi = m[i], vi = v[i];
      functors::AdamStep{}(wi, mi, vi, g[i], alpha, c1, c2, eps);
      w_out[i] = wi;
      m_out[i] = mi;
      v_out[i] = vi;
    }
  };
  // A few arithmetic operations per 28 bytes moved: worth threads only for large variables.
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
