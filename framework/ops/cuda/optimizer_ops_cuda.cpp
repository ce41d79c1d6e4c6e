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

// Inputs (w, m, v) per variable, then (g, a, b) per variable, then the step, the condition and the learning rate
// (dispatch uploaded them if they were host scalars); the outputs are the variables' and slots' own buffers.
// Gradients given as factors, and half gradients of float32 variables, are the CPU's (fold_kernel_gradients and
// fold_gradient_casts hand them only to CPU updates).
void apply_adam_multi_cuda(const KernelContext& ctx) {
  const int dev = cuda::device_of(ctx);
  const size_t count = (ctx.inputs.size() - 3) / 6;
  std::vector<void*> w(count), m(count), v(count);
  std::vector<const void*> g(count);
  std::vector<int64_t> n(count);
  for (size_t k = 0; k < count; ++k) {
    const Tensor& gradient = ctx.inputs[3 * count + 3 * k];
    if (!gradient.defined())
      throw make_error<Unimplemented>("apply_adam_multi: a gradient given as factors is not implemented on CUDA");
    if (gradient.dtype() != ctx.outputs[3 * k].dtype())
      throw make_error<Unimplemented>("apply_adam_multi: a ", gradient.dtype(), " gradient of a ",
                                      ctx.outputs[3 * k].dtype(), " variable is not implemented on CUDA");
    w[k] = ctx.outputs[3 * k].raw_data();
    m[k] = ctx.outputs[3 * k + 1].raw_data();
    v[k] = ctx.outputs[3 * k + 2].raw_data();
    g[k] = gradient.raw_data();
    n[k] = ctx.outputs[3 * k].num_elements();
  }
  const auto& a = std::get<MultiAdamAttrs>(ctx.attrs);
  const DType t = ctx.outputs[0].dtype();
  const Tensor& lr = ctx.inputs[6 * count + 2];
  const bool launched = cuda::launch_apply_adam_multi(
      cuda::to_dt(t), static_cast<int>(count), w.data(), m.data(), v.data(), g.data(), n.data(),
      ctx.inputs[6 * count].data<int64_t>(), ctx.inputs[6 * count + 1].data<bool>(), lr.raw_data(),
      lr.dtype() == DType::Float64, a.beta_1, a.beta_2, a.epsilon, cuda::stream(dev));
  if (!launched) throw make_error<Unimplemented>("apply_adam_multi: dtype ", t, " is not implemented on CUDA");
  cuda::after_launch("apply_adam_multi", dev);
}
EMBER_REGISTER_KERNEL(apply_adam_multi, CUDA, apply_adam_multi_cuda, DType::Float32, DType::Float64);

// Inputs (w, m) per variable ((w) without momentum), then the gradients, the condition and the learning rate.
void apply_sgd_multi_cuda(const KernelContext& ctx) {
  const int dev = cuda::device_of(ctx);
  const auto& a = std::get<MultiSgdAttrs>(ctx.attrs);
  const size_t group = a.momentum != 0 ? 2 : 1, count = ctx.outputs.size() / group;
  std::vector<void*> w(count), m(count, nullptr);
  std::vector<const void*> g(count);
  std::vector<int64_t> n(count);
  for (size_t k = 0; k < count; ++k) {
    w[k] = ctx.outputs[group * k].raw_data();
    if (group == 2) m[k] = ctx.outputs[2 * k + 1].raw_data();
    g[k] = ctx.inputs[group * count + k].raw_data();
    n[k] = ctx.outputs[group * k].num_elements();
  }
  const DType t = ctx.outputs[0].dtype();
  const Tensor& lr = ctx.inputs.back();
  const bool launched = cuda::launch_apply_sgd_multi(
      cuda::to_dt(t), static_cast<int>(count), w.data(), m.data(), g.data(), n.data(),
      ctx.inputs[ctx.inputs.size() - 2].data<bool>(), lr.raw_data(), lr.dtype() == DType::Float64, a.momentum,
      a.nesterov, cuda::stream(dev));
  if (!launched) throw make_error<Unimplemented>("apply_sgd_multi: dtype ", t, " is not implemented on CUDA");
  cuda::after_launch("apply_sgd_multi", dev);
}
EMBER_REGISTER_KERNEL(apply_sgd_multi, CUDA, apply_sgd_multi_cuda, DType::Float32, DType::Float64);

// Inputs: the gradients, then the scale; outputs: the unscaled gradients, then the flag.
void unscale_gradients_cuda(const KernelContext& ctx) {
  const int dev = cuda::device_of(ctx);
  const size_t count = ctx.outputs.size() - 1;
  std::vector<cuda::DT> dt(count);
  std::vector<const void*> in(count);
  std::vector<void*> out(count);
  std::vector<int64_t> n(count);
  for (size_t k = 0; k < count; ++k) {
    dt[k] = cuda::to_dt(ctx.inputs[k].dtype());
    in[k] = ctx.inputs[k].raw_data();
    out[k] = ctx.outputs[k].raw_data();
    n[k] = ctx.inputs[k].num_elements();
  }
  cuda::launch_unscale_gradients(static_cast<int>(count), dt.data(), in.data(), out.data(), n.data(),
                                 ctx.inputs[count].data<float>(), ctx.outputs[count].data<bool>(), cuda::stream(dev));
  cuda::after_launch("unscale_gradients", dev);
}
EMBER_REGISTER_KERNEL(unscale_gradients, CUDA, unscale_gradients_cuda, DType::Float16, DType::BFloat16,
                      DType::Float32, DType::Float64);

void update_loss_scale_cuda(const KernelContext& ctx) {
  const int dev = cuda::device_of(ctx);
  cuda::launch_update_loss_scale(ctx.inputs[0].data<float>(), ctx.inputs[1].data<int64_t>(), ctx.inputs[2].data<bool>(),
                                 std::get<LossScaleAttrs>(ctx.attrs).growth_steps, ctx.outputs[0].data<float>(),
                                 ctx.outputs[1].data<int64_t>(), cuda::stream(dev));
  cuda::after_launch("update_loss_scale", dev);
}
EMBER_REGISTER_KERNEL(update_loss_scale, CUDA, update_loss_scale_cuda, DType::Float32);

}  // namespace
}  // namespace ember
