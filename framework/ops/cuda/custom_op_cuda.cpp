// CUDA registration of op_list.def's `custom` row: the registered op's own CUDA kernel, on the device's stream.
#include "framework/ops/cuda/kernel_util.h"
#include "framework/ops/custom_op.h"
#include "framework/ops/dispatch.h"

namespace ember {
namespace {

void custom_cuda(const KernelContext& ctx) {
  const int dev = cuda::device_of(ctx);
  ops::detail::run_custom_kernel(ctx, cuda::stream(dev));
  cuda::after_launch(op_name(ctx.op, ctx.attrs), dev);
}

}  // namespace

EMBER_REGISTER_KERNEL(custom, CUDA, custom_cuda);

}  // namespace ember
