// CUDA registration of the fused optimizer updates (kernel in optimizer_ops.cu), over the CPU's dtypes.
#include <vector>

#include "framework/core/error.h"
#include "framework/ops/cuda/kernel_util.h"
#include "framework/ops/cuda/optimizer_ops_launch.h"
#include "framework/ops/dispatch.h"

namespace ember {
namespace {

// The coefficients are rounded to the variable's dtype here, as the CPU kernel rounds them (and as the
// unfused ops would round their scalars); widened back to double they travel exactly.
template <class T>
void apply_adam_cuda_as(const KernelContext& ctx, int dev) {
  const auto& a = std::get<AdamAttrs>(ctx.attrs);
  const T alpha = static_cast<T>(a.alpha), c1 = static_cast<T>(a.one_minus_beta_1),
          c2 = static_cast<T>(a.one_minus_beta_2), eps = static_cast<T>(a.epsilon);
  cuda::launch_apply_adam(cuda::to_dt(ctx.inputs[0].dtype()), ctx.inputs[0].raw_data(), ctx.inputs[1].raw_data(),
                          ctx.inputs[2].raw_data(), ctx.inputs[3].raw_data(), ctx.outputs[0].raw_data(),
                          ctx.outputs[1].raw_data(), ctx.outputs[2].raw_data(), ctx.inputs[0].num_elements(), alpha,
                          c1, c2, eps, cuda::stream(dev));
}

void apply_adam_cuda(const KernelContext& ctx) {
  const DType t = ctx.inputs[0].dtype();
  if (ctx.inputs[0].num_elements() == 0) return;
  const int dev = cuda::device_of(ctx);
  switch (t) {
    case DType::Float32: apply_adam_cuda_as<float>(ctx, dev); break;
    case DType::Float64: apply_adam_cuda_as<double>(ctx, dev); break;
    default: throw make_error<Unimplemented>("apply_adam: dtype ", t, " is not implemented on CUDA");
  }
  cuda::after_launch("apply_adam", dev);
}
EMBER_REGISTER_KERNEL(apply_adam, CUDA, apply_adam_cuda, DType::Float32, DType::Float64);

void apply_adam_factored_cuda(const KernelContext& ctx) {
  const Tensor& out = ctx.outputs[0];
  if (out.num_elements() == 0) return;
  const int dev = cuda::device_of(ctx);
  const auto& a = std::get<AdamAttrs>(ctx.attrs);
  const DType t = out.dtype();
  // The launcher rounds the coefficients to the dtype, as the CPU kernel does.
  const bool launched = cuda::launch_apply_adam_factored(
      cuda::to_dt(t), ctx.outputs[0].raw_data(), ctx.outputs[1].raw_data(), ctx.outputs[2].raw_data(),
      ctx.inputs[3].raw_data(), ctx.inputs[4].raw_data(), ctx.inputs[3].shape()[0], out.shape()[0], out.shape()[1],
      a.alpha, a.one_minus_beta_1, a.one_minus_beta_2, a.epsilon, cuda::stream(dev));
  if (!launched) throw make_error<Unimplemented>("apply_adam_factored: dtype ", t, " is not implemented on CUDA");
  cuda::after_launch("apply_adam_factored", dev);
}
EMBER_REGISTER_KERNEL(apply_adam_factored, CUDA, apply_adam_factored_cuda, DType::Float32, DType::Float64);

// Inputs (w, m, v, g) per variable, then the step and the condition (dispatch uploaded them if they were
// host scalars); the outputs are the variables' and slots' own buffers.
void apply_adam_multi_cuda(const KernelContext& ctx) {
  const int dev = cuda::device_of(ctx);
  const size_t count = ctx.outputs.size() / 3;
  std::vector<void*> w(count), m(count), v(count);
  std::vector<const void*> g(count);
  std::vector<int64_t> n(count);
  for (size_t k = 0; k < count; ++k) {
    w[k] = ctx.outputs[3 * k].raw_data();
    m[k] = ctx.outputs[3 * k + 1].raw_data();
    v[k] = ctx.outputs[3 * k + 2].raw_data();
    g[k] = ctx.inputs[4 * k + 3].raw_data();
    n[k] = ctx.outputs[3 * k].num_elements();
  }
  const auto& a = std::get<MultiAdamAttrs>(ctx.attrs);
  const DType t = ctx.outputs[0].dtype();
  const bool launched = cuda::launch_apply_adam_multi(
      cuda::to_dt(t), static_cast<int>(count), w.data(), m.data(), v.data(), g.data(), n.data(),
      ctx.inputs[4 * count].data<int64_t>(), ctx.inputs[4 * count + 1].data<bool>(), a.learning_rate, a.beta_1,
      a.beta_2, a.epsilon, cuda::stream(dev));
  if (!launched) throw make_error<Unimplemented>("apply_adam_multi: dtype ", t, " is not implemented on CUDA");
  cuda::after_launch("apply_adam_multi", dev);
}
EMBER_REGISTER_KERNEL(apply_adam_multi, CUDA, apply_adam_multi_cuda, DType::Float32, DType::Float64);

// Inputs (w, m, g) per variable ((w, g) without momentum), then the condition.
void apply_sgd_multi_cuda(const KernelContext& ctx) {
  const int dev = cuda::device_of(ctx);
  const auto& a = std::get<MultiSgdAttrs>(ctx.attrs);
  const size_t group = a.momentum != 0 ? 3 : 2, count = (ctx.inputs.size() - 1) / group;
  std::vector<void*> w(count), m(count, nullptr);
  std::vector<const void*> g(count);
  std::vector<int64_t> n(count);
  for (size_t k = 0; k < count; ++k) {
    w[k] = ctx.outputs[(group - 1) * k].raw_data();
    if (group == 3) m[k] = ctx.outputs[2 * k + 1].raw_data();
    g[k] = ctx.inputs[group * k + group - 1].raw_data();
    n[k] = ctx.outputs[(group - 1) * k].num_elements();
  }
  const DType t = ctx.outputs[0].dtype();
  const bool launched = cuda::launch_apply_sgd_multi(cuda::to_dt(t), static_cast<int>(count), w.data(), m.data(),
                                                     g.data(), n.data(), ctx.inputs.back().data<bool>(),
                                                     a.learning_rate, a.momentum, a.nesterov, cuda::stream(dev));
  if (!launched) throw make_error<Unimplemented>("apply_sgd_multi: dtype ", t, " is not implemented on CUDA");
  cuda::after_launch("apply_sgd_multi", dev);
}
EMBER_REGISTER_KERNEL(apply_sgd_multi, CUDA, apply_sgd_multi_cuda, DType::Float32, DType::Float64);

void unscale_gradient_cuda(const KernelContext& ctx) {
  const int dev = cuda::device_of(ctx);
  const DType t = ctx.inputs[0].dtype();
  const bool launched = cuda::launch_unscale_gradient(
      cuda::to_dt(t), ctx.inputs[0].raw_data(), ctx.inputs[1].raw_data(), ctx.inputs[2].data<bool>(),
      ctx.outputs[0].raw_data(), ctx.outputs[1].data<bool>(), ctx.inputs[0].num_elements(), cuda::stream(dev));
  if (!launched) throw make_error<Unimplemented>("unscale_gradient: dtype ", t, " is not implemented on CUDA");
  cuda::after_launch("unscale_gradient", dev);
}
EMBER_REGISTER_KERNEL(unscale_gradient, CUDA, unscale_gradient_cuda, DType::Float32, DType::Float64);

}  // namespace
}  // namespace ember
