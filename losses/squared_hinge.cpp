// SquaredHinge (keras/src/losses/losses.py squared_hinge and convert_binary_labels_to_hinge).
#include "losses/squared_hinge.h"

#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "framework/ops/tensor_helpers.h"
#include "losses/loss_utils.h"

namespace ember::losses {

namespace {
constexpr const char* kSquaredHingeName = "squared_hinge";
[[maybe_unused]] const bool squared_hinge_registered =
    detail::register_loss("SquaredHinge", &SquaredHinge::from_config, {"squared_hinge"});
}  // namespace

SquaredHinge::SquaredHinge(LossOptions options)
    : Loss(detail::name_or(options.name, kSquaredHingeName), options.reduction, "SquaredHinge") {}

Tensor SquaredHinge::call(const Tensor& y_true, const Tensor& y_pred) const {
  auto [t, p] = detail::prepare_same_shape(class_name(), y_true, y_pred);
  t = detail::convert_binary_labels_to_hinge(t);
  return ops::reduce_mean(ops::square(ops::maximum(1.0 - t * p, ops::f32(0))), -1);
}

LossPtr SquaredHinge::from_config(const nlohmann::json& config) {
  auto base = detail::read_base_config(config, "SquaredHinge", kSquaredHingeName);
  return std::make_shared<SquaredHinge>(LossOptions{.reduction = base.reduction, .name = base.name});
}

}  // namespace ember::losses
