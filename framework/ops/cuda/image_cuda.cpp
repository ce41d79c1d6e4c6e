// CUDA registration of affine_transform (kernel in image.cu, same math as cpu/image.cpp).
#include "framework/ops/cuda/image_launch.h"
#include "framework/ops/cuda/kernel_util.h"
#include "framework/ops/dispatch.h"

namespace ember {
namespace {

void affine_transform_cuda(const KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const Tensor& transforms = ctx.inputs[1];
  Tensor& y = ctx.outputs[0];
  if (y.num_elements() == 0) return;
  const auto& a = std::get<AffineTransformAttrs>(ctx.attrs);
  float fill = 0;  // rounded to the image dtype, as the CPU kernel rounds it
  EMBER_DISPATCH_FLOAT(x.dtype(), "affine_transform", fill = static_cast<float>(static_cast<scalar_t>(a.fill_value)));
  const int dev = cuda::device_of(ctx);
  cuda::launch_affine_transform(cuda::to_dt(x.dtype()), x.raw_data(), static_cast<const float*>(transforms.raw_data()),
                                transforms.shape()[0] == 1, y.raw_data(), x.shape()[0], x.shape()[1], x.shape()[2],
                                x.shape()[3], a.fill_mode, a.interpolation, fill, dev, op_name(ctx.op));
}

}  // namespace

EMBER_REGISTER_KERNEL(affine_transform, CUDA, affine_transform_cuda, DType::Float32, DType::Float64, DType::Float16,
                      DType::BFloat16);

}  // namespace ember
