// CUDA fused batch norm through cuDNN's NHWC batch norm (cudnnBatchNormalizationForwardTrainingEx and
// cudnnBatchNormalizationBackwardEx, CUDNN_BATCHNORM_SPATIAL_PERSISTENT, as TF's FusedBatchNormV3 and PyTorch's
// channels_last batch norm use them), with relu and the side input's addition in the same pass (cuDNN's
// BN_ACTIVATION and BN_ADD_ACTIVATION). cuDNN 9 still ships this legacy API (marked deprecated in favour of its
// graph API, which adds nothing for this op).
// - x is described as NHWC (n, c, h, w): a rank-4 input as it is, any other rank as (rows, c, 1, 1).
// - The statistics: the saved mean and inverse standard deviation are the op's mean and inv_std outputs.
//   cuDNN's running variance is the unbiased one, and Keras averages the biased one, so the running outputs are
//   asked with an average factor of 1 (the batch's own statistics) into zeroed buffers, and the unbiased variance
//   is scaled by (m - 1) / m into the variance output (m the rows normalized together; 0 for a single row).
// - The saved state is cuDNN's reserve space, its size asked of cuDNN by the front end
//   (ops::detail::set_batch_norm_saved_bytes) so that it is an output like any other.
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>

#include "framework/core/error.h"
#include "framework/ops/batch_norm.h"
#include "framework/ops/cuda/kernel_util.h"
#include "framework/ops/cuda/library_handles.h"
#include "framework/ops/dispatch.h"

namespace ember {

namespace {

constexpr cudnnBatchNormMode_t kBnMode = CUDNN_BATCHNORM_SPATIAL_PERSISTENT;

struct BnCudaDescs {
  cudnnTensorDescriptor_t x = nullptr, stats = nullptr;
  cudnnActivationDescriptor_t act = nullptr;  // relu; none for Bn
  BnCudaDescs() = default;
  BnCudaDescs(const BnCudaDescs&) = delete;
  BnCudaDescs& operator=(const BnCudaDescs&) = delete;
  ~BnCudaDescs() {
    if (act) cudnnDestroyActivationDescriptor(act);
    if (stats) cudnnDestroyTensorDescriptor(stats);
    if (x) cudnnDestroyTensorDescriptor(x);
  }
};

cudnnBatchNormOps_t bn_cuda_ops(BatchNormOps f) {
  switch (f) {
    case BatchNormOps::BnRelu: return CUDNN_BATCHNORM_OPS_BN_ACTIVATION;
    case BatchNormOps::BnAddRelu: return CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION;
    default: return CUDNN_BATCHNORM_OPS_BN;
  }
}

// Whether cuDNN's 32-bit descriptors hold x (and its dtype is one cuDNN's NHWC batch norm takes).
bool bn_cuda_fits(const Shape& x, DType dt) {
  return x.rank() >= 2 && x.num_elements() > 0 && x.num_elements() <= std::numeric_limits<int32_t>::max() &&
         (dt == DType::Float32 || dt == DType::Float16 || dt == DType::BFloat16);
}

std::string bn_cuda_context(const Shape& x, DType dt, BatchNormOps f) {
  std::ostringstream os;
  os << "x " << x << " " << dtype_name(dt) << ", ops "
     << (f == BatchNormOps::Bn ? "BN" : f == BatchNormOps::BnRelu ? "BN_ACTIVATION" : "BN_ADD_ACTIVATION");
  return os.str();
}

void bn_cuda_make_descs(BnCudaDescs& d, const Shape& x, DType dt, BatchNormOps f, const char* op) {
  auto check = [&](cudnnStatus_t st, const char* call) {
    cuda::check_cudnn(st, op, call, [&] { return bn_cuda_context(x, dt, f); });
  };
  const int64_t c = x[x.rank() - 1];
  const bool nhwc = x.rank() == 4;
  const int n = static_cast<int>(nhwc ? x[0] : x.num_elements() / c);
  const int h = static_cast<int>(nhwc ? x[1] : 1), w = static_cast<int>(nhwc ? x[2] : 1);
  const cudnnDataType_t type =
      dt == DType::Float16 ? CUDNN_DATA_HALF : dt == DType::BFloat16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
  check(cudnnCreateTensorDescriptor(&d.x), "cudnnCreateTensorDescriptor");
  check(cudnnSetTensor4dDescriptor(d.x, CUDNN_TENSOR_NHWC, type, n, static_cast<int>(c), h, w),
        "cudnnSetTensor4dDescriptor");
  check(cudnnCreateTensorDescriptor(&d.stats), "cudnnCreateTensorDescriptor");
  check(cudnnDeriveBNTensorDescriptor(d.stats, d.x, kBnMode), "cudnnDeriveBNTensorDescriptor");
  if (f == BatchNormOps::Bn) return;
  check(cudnnCreateActivationDescriptor(&d.act), "cudnnCreateActivationDescriptor");
  check(cudnnSetActivationDescriptor(d.act, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0),
        "cudnnSetActivationDescriptor");
}

// The reserve space cuDNN keeps between the forward and the backward (the front end's saved-state size).
int64_t bn_cuda_saved_bytes(int device, const Shape& x, DType dt, BatchNormOps f) {
  if (!bn_cuda_fits(x, dt)) return 0;  // the kernel refuses these
  cuda::activate(device);
  const cuda::CudnnLease lease = cuda::cudnn_handle(device);
  BnCudaDescs d;
  bn_cuda_make_descs(d, x, dt, f, "fused_batch_norm");
  size_t bytes = 0;
  cuda::check_cudnn(
      cudnnGetBatchNormalizationTrainingExReserveSpaceSize(lease.handle, kBnMode, bn_cuda_ops(f), d.act, d.x, &bytes),
      "fused_batch_norm", "cudnnGetBatchNormalizationTrainingExReserveSpaceSize",
      [&] { return bn_cuda_context(x, dt, f); });
  return static_cast<int64_t>(bytes);
}

const bool bn_cuda_saved_bytes_registered = [] {
  ops::detail::set_batch_norm_saved_bytes(DeviceType::CUDA, bn_cuda_saved_bytes);
  return true;
}();

size_t bn_cuda_round_up(size_t bytes) { return (bytes + 255) / 256 * 256; }


// What both kernels set up: x checked, its device current, the device's cuDNN handle (held for the call), the
// descriptors and the reserve space's size.
struct BnCudaCall {
  const BatchNormAttrs& a;
  const char* op;
  const Shape& shape;
  DType dt;
  std::string context;
  int dev;
  cuda::CudnnLease lease;
  BnCudaDescs d;
  cudnnBatchNormOps_t bn_ops;
  bool relu, add;
  size_t reserve = 0;

  BnCudaCall(const KernelContext& ctx, const Tensor& x)
      : a(std::get<BatchNormAttrs>(ctx.attrs)),
        op(op_name(ctx.op)),
        shape(x.shape()),
        dt(x.dtype()),
        context(bn_cuda_context(shape, dt, a.ops)),
        dev(checked_device(ctx)),
        lease(cuda::cudnn_handle(dev)),
        bn_ops(bn_cuda_ops(a.ops)),
        relu(a.ops != BatchNormOps::Bn),
        add(a.ops == BatchNormOps::BnAddRelu) {
    bn_cuda_make_descs(d, shape, dt, a.ops, op);
    check(cudnnGetBatchNormalizationTrainingExReserveSpaceSize(lease.handle, kBnMode, bn_ops, d.act, d.x, &reserve),
          "cudnnGetBatchNormalizationTrainingExReserveSpaceSize");
  }

  int checked_device(const KernelContext& ctx) const {
    EMBER_CHECK(bn_cuda_fits(shape, dt), Unimplemented)
        << op << ": cuDNN's batch norm takes a non-empty float16, bfloat16 or float32 x of under 2^31 elements, got "
        << context;
    return cuda::device_of(ctx);
  }
  void check(cudnnStatus_t st, const char* call) const {
    cuda::check_cudnn(st, op, call, [&] { return context; });
  }
  // The reserve space in the op's saved state, checked against what cuDNN asks for this call.
  void* reserve_in(const Tensor& saved) const {
    EMBER_CHECK(saved.nbytes() >= reserve, Internal)
        << op << ": cuDNN asks for " << reserve << " bytes of reserve space, the saved state holds " << saved.nbytes()
        << " (" << context << ")";
    return reserve > 0 ? const_cast<void*>(saved.raw_data()) : nullptr;
  }
};

void fused_batch_norm_cuda(const KernelContext& ctx) {
  const Tensor &x = ctx.inputs[0], &scale = ctx.inputs[1], &offset = ctx.inputs[2];
  BnCudaCall call(ctx, x);
  const cudaStream_t stream = cuda::stream(call.dev);
  const int64_t c = call.shape[call.shape.rank() - 1], m = call.shape.num_elements() / c;
  const BnCudaDescs& d = call.d;
  size_t ws = 0;
  call.check(cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(call.lease.handle, kBnMode, call.bn_ops, d.x,
                                                                      call.add ? d.x : nullptr, d.x, d.stats, d.act,
                                                                      &ws),
             "cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize");
  void* reserve = call.reserve_in(ctx.outputs[4]);

  // One workspace request: the running mean cuDNN writes (not an output), then cuDNN's scratch.
  const size_t running_bytes = bn_cuda_round_up(static_cast<size_t>(c) * sizeof(float));
  char* base = static_cast<char*>(cuda::workspace(call.dev, running_bytes + ws));
  void* running_mean = base;
  void* variance = ctx.outputs[2].raw_data();
  // With an average factor of 1 cuDNN still reads the running buffers (times 0): zeroed, no NaN comes in.
  EMBER_CUDA_CHECK(cudaMemsetAsync(running_mean, 0, running_bytes, stream), call.op);
  EMBER_CUDA_CHECK(cudaMemsetAsync(variance, 0, ctx.outputs[2].nbytes(), stream), call.op);
  const float one = 1.0f, zero = 0.0f;
  call.check(cudnnBatchNormalizationForwardTrainingEx(
                 call.lease.handle, kBnMode, call.bn_ops, &one, &zero, d.x, x.raw_data(), call.add ? d.x : nullptr,
                 call.add ? ctx.inputs[3].raw_data() : nullptr, d.x, ctx.outputs[0].raw_data(), d.stats,
                 scale.raw_data(), offset.raw_data(), 1.0, running_mean, variance, call.a.epsilon,
                 ctx.outputs[1].raw_data(), ctx.outputs[3].raw_data(), d.act, ws > 0 ? base + running_bytes : nullptr,
                 ws, reserve, call.reserve),
             "cudnnBatchNormalizationForwardTrainingEx");
  // The unbiased variance to the biased one (a single row has none: 0).
  if (m > 1) {
    const float to_biased = static_cast<float>(static_cast<double>(m - 1) / static_cast<double>(m));
    call.check(cudnnScaleTensor(call.lease.handle, d.stats, variance, &to_biased), "cudnnScaleTensor");
  } else {
    EMBER_CUDA_CHECK(cudaMemsetAsync(variance, 0, ctx.outputs[2].nbytes(), stream), call.op);
  }
}

void fused_batch_norm_grad_cuda(const KernelContext& ctx) {
  const Tensor &dy = ctx.inputs[0], &x = ctx.inputs[1];
  BnCudaCall call(ctx, x);
  const BnCudaDescs& d = call.d;
  const bool relu = call.relu, add = call.add;
  size_t ws = 0;
  call.check(cudnnGetBatchNormalizationBackwardExWorkspaceSize(call.lease.handle, kBnMode, call.bn_ops, d.x,
                                                               relu ? d.x : nullptr, d.x, add ? d.x : nullptr, d.x,
                                                               d.stats, d.act, &ws),
             "cudnnGetBatchNormalizationBackwardExWorkspaceSize");
  void* reserve = call.reserve_in(ctx.inputs[6]);
  void* workspace = ws > 0 ? cuda::workspace(call.dev, ws) : nullptr;
  const float one = 1.0f, zero = 0.0f;
  call.check(cudnnBatchNormalizationBackwardEx(
                 call.lease.handle, kBnMode, call.bn_ops, &one, &zero, &one, &zero, d.x, x.raw_data(),
                 relu ? d.x : nullptr, relu ? ctx.inputs[7].raw_data() : nullptr, d.x, dy.raw_data(),
                 add ? d.x : nullptr, add ? ctx.outputs[3].raw_data() : nullptr, d.x, ctx.outputs[0].raw_data(),
                 d.stats, ctx.inputs[2].raw_data(), ctx.inputs[3].raw_data(), ctx.outputs[1].raw_data(),
                 ctx.outputs[2].raw_data(), call.a.epsilon, ctx.inputs[4].raw_data(), ctx.inputs[5].raw_data(), d.act,
                 workspace, ws, reserve, call.reserve),
             "cudnnBatchNormalizationBackwardEx");
}

}  // namespace

EMBER_REGISTER_KERNEL(fused_batch_norm, CUDA, fused_batch_norm_cuda, DType::Float32, DType::Float16, DType::BFloat16);
EMBER_REGISTER_KERNEL(fused_batch_norm_grad, CUDA, fused_batch_norm_grad_cuda, DType::Float32, DType::Float16,
                      DType::BFloat16);

}  // namespace ember
