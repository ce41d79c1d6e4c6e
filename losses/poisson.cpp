// Poisson (keras/src/losses/losses.py poisson).
#include "losses/poisson.h"

#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "losses/loss_utils.h"

namespace ember::losses {

namespace {
constexpr const char* kPoissonName = "poisson";
[[maybe_unused]] const bool poisson_registered = detail::register_loss("Poisson", &Poisson::from_config, {"poisson"});
}  // namespace

Poisson::Poisson(LossOptions options) : Loss(detail::name_or(options.name, kPoissonName), options.reduction, "Poisson") {}

Tensor Poisson::call(const Tensor& y_true, const Tensor& y_pred) const {
  auto [t, p] = detail::prepare_same_shape(class_name(), y_true, y_pred);
  // As Keras: epsilon is added, not a clip, so a negative y_pred gives NaN there.
  return ops::reduce_mean(p - t * ops::log(p + 1e-7), -1);
}

LossPtr Poisson::from_config(const nlohmann::json& config) {
  auto base = detail::read_base_config(config, "Poisson", kPoissonName);
  return std::make_shared<Poisson>(LossOptions{.reduction = base.reduction, .name = base.name});
}

}  // namespace ember::losses
