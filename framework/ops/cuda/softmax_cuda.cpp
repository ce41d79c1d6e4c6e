// CUDA registration of softmax / log_softmax (the input seen as (outer, n, inner) around the axis) and of the
// sparse softmax crossentropy.
#include "framework/ops/cuda/kernel_util.h"
#include "framework/ops/cuda/softmax_launch.h"
#include "framework/ops/dispatch.h"

namespace ember {
namespace {

template <bool kLog>
void softmax_cuda(const KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  if (x.num_elements() == 0) return;
  const int64_t axis = std::get<AxisAttrs>(ctx.attrs).axis;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape()[d];
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.shape()[d];
  const int dev = cuda::device_of(ctx);
  cuda::softmax_launch(kLog, cuda::to_dt(x.dtype()), x.raw_data(), y.raw_data(), outer, x.shape()[axis], inner, dev,
                       cuda::stream(dev), op_name(ctx.op));
}

void sparse_xent_cuda(const KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const Tensor& labels = ctx.inputs[1];
  const int dev = cuda::device_of(ctx);
  cuda::sparse_xent_launch(cuda::to_dt(x.dtype()), labels.dtype() == DType::Int64, x.raw_data(), labels.raw_data(),
                           ctx.outputs[0].raw_data(), labels.num_elements(), x.shape()[x.rank() - 1], dev,
                           cuda::stream(dev), op_name(ctx.op));
}

void sparse_xent_backprop_cuda(const KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const Tensor& labels = ctx.inputs[1];
  const int dev = cuda::device_of(ctx);
  cuda::sparse_xent_backprop_launch(cuda::to_dt(x.dtype()), labels.dtype() == DType::Int64, x.raw_data(),
                                    labels.raw_data(), ctx.outputs[0].raw_data(), labels.num_elements(),
                                    x.shape()[x.rank() - 1], dev, cuda::stream(dev), op_name(ctx.op));
}

}  // namespace

EMBER_REGISTER_KERNEL(softmax, CUDA, softmax_cuda<false>, EMBER_FLOAT_DTYPES);
EMBER_REGISTER_KERNEL(log_softmax, CUDA, softmax_cuda<true>, EMBER_FLOAT_DTYPES);
EMBER_REGISTER_KERNEL(sparse_softmax_cross_entropy_with_logits, CUDA, sparse_xent_cuda, DType::Float32, DType::Float64);
EMBER_REGISTER_KERNEL(sparse_softmax_cross_entropy_backprop, CUDA, sparse_xent_backprop_cuda, DType::Float32,
                      DType::Float64);

}  // namespace ember
