// CUDA registration of the fused attention and its backward (float32 and float64, as on the CPU).
#include "framework/ops/cuda/attention_launch.h"
#include "framework/ops/cuda/kernel_util.h"
#include "framework/ops/dispatch.h"

namespace ember {
namespace {

// A thread's rows of the kernels' shared-memory tiles must fit in a block's 48 KiB.
constexpr int64_t kMaxDims = 2000;

cuda::AttentionDims dims_of(const KernelContext& ctx) {
  const Shape &q = ctx.inputs[0].shape(), &k = ctx.inputs[1].shape(), &v = ctx.inputs[2].shape();
  const auto& a = std::get<FusedAttentionAttrs>(ctx.attrs);
  EMBER_CHECK(q[3] + v[3] <= kMaxDims, Unimplemented)
      << op_name(ctx.op) << ": on CUDA the head_dim plus value_dim must be at most " << kMaxDims << ", got " << q[3]
      << " + " << v[3];
  return {q[0], q[1], k[1], q[2], q[3], v[3], a.scale, a.causal};
}

void fused_attention_cuda(const KernelContext& ctx) {
  const int dev = cuda::device_of(ctx);
  cuda::fused_attention_launch(cuda::to_dt(ctx.inputs[0].dtype()), dims_of(ctx), ctx.inputs[0].raw_data(),
                               ctx.inputs[1].raw_data(), ctx.inputs[2].raw_data(), ctx.outputs[0].raw_data(),
                               ctx.outputs[1].raw_data(), dev, cuda::stream(dev), op_name(ctx.op));
}

void fused_attention_grad_cuda(const KernelContext& ctx) {
  const int dev = cuda::device_of(ctx);
  const auto& in = ctx.inputs;
  cuda::fused_attention_grad_launch(cuda::to_dt(in[0].dtype()), dims_of(ctx), in[0].raw_data(), in[1].raw_data(),
                                    in[2].raw_data(), in[3].raw_data(), in[4].raw_data(), in[5].raw_data(),
                                    ctx.outputs[0].raw_data(), ctx.outputs[1].raw_data(), ctx.outputs[2].raw_data(),
                                    dev, cuda::stream(dev), op_name(ctx.op));
}

}  // namespace

EMBER_REGISTER_KERNEL(fused_attention, CUDA, fused_attention_cuda, DType::Float32, DType::Float64);
EMBER_REGISTER_KERNEL(fused_attention_grad, CUDA, fused_attention_grad_cuda, DType::Float32, DType::Float64);

}  // namespace ember
