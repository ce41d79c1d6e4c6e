#include "framework/ops/batch_norm.h"

#include <cmath>
#include <initializer_list>
#include <limits>
#include <string>
#include <utility>

#include "framework/core/error.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/elementwise.h"

namespace ember::ops {

namespace {

detail::BatchNormSavedBytesFn g_saved_bytes[2] = {nullptr, nullptr};  // per DeviceType

// The dtype of the scale, offset and statistics of an x of dtype dt.
DType bn_stats_dtype(DType dt) { return dt == DType::Float64 ? DType::Float64 : DType::Float32; }

const char* bn_fusion_name(BatchNormOps f) {
  switch (f) {
    case BatchNormOps::Bn: return "Bn";
    case BatchNormOps::BnRelu: return "BnRelu";
    case BatchNormOps::BnAddRelu: return "BnAddRelu";
  }
  return "?";
}

// InvalidArgument unless x is a floating tensor of rank >= 2 and scale, offset (and the statistics in `vectors`)
// are vectors of its last dimension in its statistics dtype.
void bn_check_operands(const char* op, const Tensor& x, std::initializer_list<std::pair<const char*, const Tensor*>> vectors,
                    double epsilon) {
  EMBER_CHECK(x.rank() >= 2 && is_floating(x.dtype()), InvalidArgument)
      << op << ": expected x of rank >= 2 (normalized over every axis but the last) and a floating dtype, got "
      << x.shape() << " " << dtype_name(x.dtype());
  const int64_t c = x.shape()[x.rank() - 1];
  const DType sd = bn_stats_dtype(x.dtype());
  for (const auto& [name, t] : vectors)
    EMBER_CHECK(t->shape() == Shape({c}) && t->dtype() == sd, InvalidArgument)
        << op << ": expected " << name << " of shape " << Shape({c}) << " (x's last dimension) and dtype " << dtype_name(sd)
        << " for x " << x.shape() << " " << dtype_name(x.dtype()) << ", got " << t->shape() << " "
        << dtype_name(t->dtype());
  EMBER_CHECK(std::isfinite(epsilon) && epsilon >= 0, InvalidArgument)
      << op << ": epsilon must be finite and >= 0, got " << epsilon;
}

// InvalidArgument unless t (named `name`) is present exactly when `wanted`, with x's shape and dtype.
void bn_check_like_x(const char* op, const Tensor& x, const std::optional<Tensor>& t, bool wanted, const char* name,
                  BatchNormOps fusion) {
  EMBER_CHECK(t.has_value() == wanted, InvalidArgument)
      << op << ": " << bn_fusion_name(fusion) << (wanted ? " needs " : " does not take ") << name;
  if (!t) return;
  EMBER_CHECK(t->shape() == x.shape() && t->dtype() == x.dtype(), InvalidArgument)
      << op << ": expected " << name << " of x's shape " << x.shape() << " and dtype " << dtype_name(x.dtype())
      << ", got " << t->shape() << " " << dtype_name(t->dtype());
}

}  // namespace

std::vector<Tensor> fused_batch_norm(const Tensor& x, const Tensor& scale, const Tensor& offset, double epsilon,
                                     BatchNormOps fusion, const std::optional<Tensor>& side) {
  constexpr const char* kOp = "fused_batch_norm";
  bn_check_operands(kOp, x, {{"scale", &scale}, {"offset", &offset}}, epsilon);
  bn_check_like_x(kOp, x, side, fusion == BatchNormOps::BnAddRelu, "a side input", fusion);
  const Device device = x.device();
  if (fusion != BatchNormOps::Bn && !fused_batch_norm_fuses(device.type(), x.dtype(), x.shape()[x.rank() - 1])) {
    std::vector<Tensor> r = fused_batch_norm(x, scale, offset, epsilon);
    r[0] = relu(side ? r[0] + *side : r[0]);
    return r;
  }
  const detail::BatchNormSavedBytesFn saved = g_saved_bytes[static_cast<int>(device.type())];
  const int64_t saved_bytes = saved ? saved(device.index(), x.shape(), x.dtype(), fusion) : 0;
  const Shape c{x.shape()[x.rank() - 1]};
  const DType sd = bn_stats_dtype(x.dtype());
  const OutputSpec specs[] = {{x.shape(), x.dtype()}, {c, sd}, {c, sd}, {c, sd}, {Shape{saved_bytes}, DType::UInt8}};
  std::vector<Tensor> inputs = {x, scale, offset};
  if (side) inputs.push_back(*side);
  return run_op(OpId::fused_batch_norm, inputs, specs, BatchNormAttrs{epsilon, fusion});
}

std::vector<Tensor> fused_batch_norm_grad(const Tensor& dy, const Tensor& x, const Tensor& scale, const Tensor& offset,
                                          const Tensor& mean, const Tensor& inv_std, const Tensor& saved,
                                          double epsilon, BatchNormOps fusion, const std::optional<Tensor>& y) {
  constexpr const char* kOp = "fused_batch_norm_grad";
  bn_check_operands(kOp, x, {{"scale", &scale}, {"offset", &offset}, {"mean", &mean}, {"inv_std", &inv_std}}, epsilon);
  bn_check_like_x(kOp, x, dy, true, "dy", fusion);
  bn_check_like_x(kOp, x, y, fusion != BatchNormOps::Bn, "the forward's output y", fusion);
  EMBER_CHECK(saved.rank() == 1 && saved.dtype() == DType::UInt8, InvalidArgument)
      << kOp << ": expected the forward's saved state (uint8 of rank 1), got " << saved.shape() << " "
      << dtype_name(saved.dtype());
  if (fusion != BatchNormOps::Bn && !fused_batch_norm_fuses(x.device().type(), x.dtype(), x.shape()[x.rank() - 1])) {
    const Tensor g = relu_grad(dy, *y);
    std::vector<Tensor> r = fused_batch_norm_grad(g, x, scale, offset, mean, inv_std, saved, epsilon);
    if (fusion == BatchNormOps::BnAddRelu) r.push_back(g);
    return r;
  }
  const Shape c{x.shape()[x.rank() - 1]};
  const DType sd = bn_stats_dtype(x.dtype());
  std::vector<OutputSpec> specs = {{x.shape(), x.dtype()}, {c, sd}, {c, sd}};
  if (fusion == BatchNormOps::BnAddRelu) specs.push_back({x.shape(), x.dtype()});
  std::vector<Tensor> inputs = {dy, x, scale, offset, mean, inv_std, saved};
  if (y) inputs.push_back(*y);
  return run_op(OpId::fused_batch_norm_grad, inputs, specs, BatchNormAttrs{epsilon, fusion});
}

bool fused_batch_norm_fuses(DeviceType device, DType dtype, int64_t channels) {
  return device == DeviceType::CPU || (dtype == DType::Float16 && channels % 4 == 0);
}

bool fused_batch_norm_applies(DeviceType device, DType dtype, const Shape& shape, int64_t axis) {
  if (device != DeviceType::CUDA || shape.rank() < 2 || axis != shape.rank() - 1) return false;
  if (dtype != DType::Float32 && dtype != DType::Float16 && dtype != DType::BFloat16) return false;
  if (!supports(OpId::fused_batch_norm, device, dtype)) return false;
  // cuDNN describes x as (n, c, h, w) with 32-bit sizes and strides: all of them below 2^31.
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  return shape.num_elements() > 0 && shape.num_elements() <= kMax;
}

namespace detail {
void set_batch_norm_saved_bytes(DeviceType device, BatchNormSavedBytesFn fn) { g_saved_bytes[static_cast<int>(device)] = fn; }
}  // namespace detail

}  // namespace ember::ops
