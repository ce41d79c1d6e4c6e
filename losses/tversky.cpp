// Tversky (keras/src/losses/losses.py tversky).
#include "losses/tversky.h"

#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "losses/loss_utils.h"

namespace ember::losses {

namespace {
constexpr const char* kTverskyName = "tversky";
[[maybe_unused]] const bool tversky_registered = detail::register_loss("Tversky", &Tversky::from_config, {"tversky"});
}  // namespace

Tversky::Tversky(TverskyOptions options)
    : Loss(detail::name_or(options.name, kTverskyName), options.reduction, "Tversky"), options_(std::move(options)) {}

Tensor Tversky::call(const Tensor& y_true, const Tensor& y_pred) const {
  auto [t, p] = detail::prepare_same_shape(class_name(), y_true, y_pred);
  const ops::Axes axis = detail::checked_axes(class_name(), options_.axis, p.rank());
  // Keras's names: y_true is the "inputs", y_pred the "targets"; fp and fn as it computes them.
  const Tensor intersection = ops::reduce_sum(t * p, axis);
  const Tensor fp = ops::reduce_sum((1.0 - p) * t, axis);
  const Tensor fn = ops::reduce_sum(p * (1.0 - t), axis);
  const Tensor denominator = ((intersection + fp * options_.alpha) + fn * options_.beta) + 1e-7;
  return 1.0 - intersection / denominator;
}

nlohmann::json Tversky::get_config() const {
  nlohmann::json c = Loss::get_config();
  c["alpha"] = options_.alpha;
  c["beta"] = options_.beta;
  c["axis"] = detail::axis_option_to_json(options_.axis);
  return c;
}

LossPtr Tversky::from_config(const nlohmann::json& config) {
  const char* who = "Tversky";
  auto base = detail::read_base_config(config, who, kTverskyName, {"alpha", "beta", "axis"});
  return std::make_shared<Tversky>(TverskyOptions{.alpha = detail::config_double(config, "alpha", 0.5, who),
                                                  .beta = detail::config_double(config, "beta", 0.5, who),
                                                  .reduction = base.reduction,
                                                  .name = base.name,
                                                  .axis = detail::config_axis_option(config, "axis", who)});
}

}  // namespace ember::losses
