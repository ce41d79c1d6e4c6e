// CUDA registration of 2-D pooling and its gradients (kernels in pool.cu, same semantics as cpu/pool.cpp).
#include <cstdint>

#include "framework/core/error.h"
#include "framework/ops/cuda/kernel_util.h"
#include "framework/ops/cuda/pool_launch.h"
#include "framework/ops/dispatch.h"

namespace ember {

namespace {

cuda::PoolShape pool_cuda_shape(const Shape& in, const Shape& out, const Pool2DAttrs& a) {
  return {in[0],      in[1],      in[2],        in[3],        out[1],    out[2],
          a.ksize[0], a.ksize[1], a.strides[0], a.strides[1], a.pads[0], a.pads[2]};
}

template <bool kMax>
void pool_cuda(const KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  if (y.num_elements() == 0) return;
  const int dev = cuda::device_of(ctx);
  cuda::launch_pool2d_forward(cuda::to_dt(x.dtype()), kMax, x.raw_data(), y.raw_data(),
                              pool_cuda_shape(x.shape(), y.shape(), std::get<Pool2DAttrs>(ctx.attrs)), dev,
                              op_name(ctx.op));
}

void max_pool_grad_cuda(const KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const Tensor& dy = ctx.inputs[2];
  Tensor& dx = ctx.outputs[0];
  if (dx.num_elements() == 0) return;
  const cuda::PoolShape g = pool_cuda_shape(x.shape(), dy.shape(), std::get<Pool2DAttrs>(ctx.attrs));
  EMBER_CHECK(g.h * g.w <= INT32_MAX, InvalidArgument)
      << "max_pool2d_grad: images of " << g.h << "x" << g.w << " pixels are too large (at most 2^31 pixels)";
  const int dev = cuda::device_of(ctx);
  int32_t* argmax = nullptr;
  if (dy.num_elements() > 0)
    argmax = static_cast<int32_t*>(cuda::workspace(dev, static_cast<size_t>(dy.num_elements()) * sizeof(int32_t)));
  cuda::launch_max_pool2d_grad(cuda::to_dt(x.dtype()), x.raw_data(), dy.raw_data(), dx.raw_data(), argmax, g, dev,
                               op_name(ctx.op));
}

void avg_pool_grad_cuda(const KernelContext& ctx) {
  const Tensor& dy = ctx.inputs[0];
  Tensor& dx = ctx.outputs[0];
  if (dx.num_elements() == 0) return;
  const int dev = cuda::device_of(ctx);
  cuda::launch_avg_pool2d_grad(cuda::to_dt(dy.dtype()), dy.raw_data(), dx.raw_data(),
                               pool_cuda_shape(dx.shape(), dy.shape(), std::get<Pool2DAttrs>(ctx.attrs)), dev,
                               op_name(ctx.op));
}

}  // namespace

EMBER_REGISTER_KERNEL(max_pool2d, CUDA, pool_cuda<true>, DType::Float32, DType::Float64, DType::Float16,
                      DType::BFloat16);
EMBER_REGISTER_KERNEL(avg_pool2d, CUDA, pool_cuda<false>, DType::Float32, DType::Float64, DType::Float16,
                      DType::BFloat16);
EMBER_REGISTER_KERNEL(max_pool2d_grad, CUDA, max_pool_grad_cuda, DType::Float32, DType::Float64, DType::Float16,
                      DType::BFloat16);
EMBER_REGISTER_KERNEL(avg_pool2d_grad, CUDA, avg_pool_grad_cuda, DType::Float32, DType::Float64, DType::Float16,
                      DType::BFloat16);

}  // namespace ember
