// Hinge (keras/src/losses/losses.py hinge and convert_binary_labels_to_hinge).
#include "losses/hinge.h"

#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "framework/ops/tensor_helpers.h"
#include "losses/loss_utils.h"

namespace ember::losses {

namespace {
constexpr const char* kHingeName = "hinge";
[[maybe_unused]] const bool hinge_registered = detail::register_loss("Hinge", &Hinge::from_config, {"hinge"});
}  // namespace

Hinge::Hinge(LossOptions options) : Loss(detail::name_or(options.name, kHingeName), options.reduction, "Hinge") {}

Tensor Hinge::call(const Tensor& y_true, const Tensor& y_pred) const {
  auto [t, p] = detail::prepare_same_shape(class_name(), y_true, y_pred);
  t = detail::convert_binary_labels_to_hinge(t);
  return ops::reduce_mean(ops::maximum(1.0 - t * p, ops::f32(0)), -1);
}

LossPtr Hinge::from_config(const nlohmann::json& config) {
  auto base = detail::read_base_config(config, "Hinge", kHingeName);
  return std::make_shared<Hinge>(LossOptions{.reduction = base.reduction, .name = base.name});
}

}  // namespace ember::losses
