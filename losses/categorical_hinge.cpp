// CategoricalHinge (keras/src/losses/losses.py categorical_hinge).
#include "losses/categorical_hinge.h"

#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "framework/ops/tensor_helpers.h"
#include "losses/loss_utils.h"

namespace ember::losses {

namespace {
constexpr const char* kCategoricalHingeName = "categorical_hinge";
[[maybe_unused]] const bool categorical_hinge_registered =
    detail::register_loss("CategoricalHinge", &CategoricalHinge::from_config, {"categorical_hinge"});
}  // namespace

CategoricalHinge::CategoricalHinge(LossOptions options)
    : Loss(detail::name_or(options.name, kCategoricalHingeName), options.reduction, "CategoricalHinge") {}

Tensor CategoricalHinge::call(const Tensor& y_true, const Tensor& y_pred) const {
  auto [t, p] = detail::prepare_same_shape(class_name(), y_true, y_pred);
  EMBER_CHECK(p.rank() >= 1, InvalidArgument)
      << "CategoricalHinge: y_true and y_pred must be at least rank 1 (classes on the last axis), got shape "
      << p.shape();
  const Tensor pos = ops::reduce_sum(t * p, -1);
  const Tensor neg = ops::reduce_max((1.0 - t) * p, -1);
  return ops::maximum((neg - pos) + 1.0, ops::f32(0));
}

LossPtr CategoricalHinge::from_config(const nlohmann::json& config) {
  auto base = detail::read_base_config(config, "CategoricalHinge", kCategoricalHingeName);
  return std::make_shared<CategoricalHinge>(LossOptions{.reduction = base.reduction, .name = base.name});
}

}  // namespace ember::losses
