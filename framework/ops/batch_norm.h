#pragma once
// Batch normalization with the batch's own statistics in one op, and its backward (TF: FusedBatchNormV3 and
// FusedBatchNormGradV3; on CUDA cuDNN's NHWC batch norm).
#include <cstdint>
#include <optional>
#include <vector>

#include "framework/core/device.h"
#include "framework/core/tensor.h"
#include "framework/ops/attrs.h"

namespace ember::ops {

// Batch normalization of x over every axis but the last (channels last: NHWC images, (batch, features) rows)
// with the statistics of x itself, as a training step computes it:
//   y = act((x - mean) * inv_std * scale + offset [+ side]),   inv_std = 1 / sqrt(variance + epsilon),
// act being relu for BnRelu and BnAddRelu, which also adds `side` (x's shape and dtype: a residual branch).
// x is float16, bfloat16, float32 or float64 of rank >= 2; scale and offset hold x's last dimension, float32
// (float64 for float64 x), the dtype the statistics are computed in. Returns {y (x's dtype), mean, variance
// (biased, the one Keras's moving variance averages), inv_std, saved state}. The statistics take no gradient
// (they feed the moving averages); the saved state is what the device keeps for the backward (cuDNN's reserve
// space; empty on the CPU).
std::vector<Tensor> fused_batch_norm(const Tensor& x, const Tensor& scale, const Tensor& offset, double epsilon,
                                     BatchNormOps fusion = BatchNormOps::Bn, const std::optional<Tensor>& side = {});
// Its backward: {dx, d scale, d offset[, d side with BnAddRelu]} from the gradient of y, the forward's inputs and
// outputs; y (the forward's output) is read with relu only.
std::vector<Tensor> fused_batch_norm_grad(const Tensor& dy, const Tensor& x, const Tensor& scale, const Tensor& offset,
                                          const Tensor& mean, const Tensor& inv_std, const Tensor& saved,
                                          double epsilon, BatchNormOps fusion = BatchNormOps::Bn,
                                          const std::optional<Tensor>& y = {});

// Whether a device's fused_batch_norm kernels take the BnRelu and BnAddRelu fusions in one pass: the CPU's
// always; cuDNN's for float16 with a channel count that is a multiple of 4 (its NHWC semi-persistent kernel; TF's
// _FusedBatchNormEx has the same rule). Elsewhere fused_batch_norm and its gradient compute those fusions as Bn
// followed by the add and relu ops (and relu_grad before the backward), and the graph compiler does not fuse.
bool fused_batch_norm_fuses(DeviceType device, DType dtype, int64_t channels);

// Whether BatchNormalization's training step runs fused_batch_norm rather than composing it from reductions and
// elementwise ops: on a CUDA device (cuDNN's NHWC kernels, which read float16/bfloat16 activations as they are),
// for a float16, bfloat16 or float32 input of rank >= 2 normalized over its last axis (`axis` >= 0), with sizes
// cuDNN's 32-bit descriptors hold. The CPU keeps the composed ops.
bool fused_batch_norm_applies(DeviceType device, DType dtype, const Shape& shape, int64_t axis);

namespace detail {
// Bytes of the state a device's fused_batch_norm keeps for its backward (CUDA: cuDNN's reserve space), set by
// the device's backend when it loads; devices without one keep none.
using BatchNormSavedBytesFn = int64_t (*)(int device_index, const Shape& x, DType dtype, BatchNormOps fusion);
void set_batch_norm_saved_bytes(DeviceType device, BatchNormSavedBytesFn fn);
}  // namespace detail

}  // namespace ember::ops
