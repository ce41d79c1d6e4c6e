// Dice (keras/src/losses/losses.py dice).
#include "losses/dice.h"

#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "losses/loss_utils.h"

namespace ember::losses {

namespace {
constexpr const char* kDiceName = "dice";
[[maybe_unused]] const bool dice_registered = detail::register_loss("Dice", &Dice::from_config, {"dice"});
}  // namespace

Dice::Dice(DiceOptions options)
    : Loss(detail::name_or(options.name, kDiceName), options.reduction, "Dice"), axis_(std::move(options.axis)) {}

Tensor Dice::call(const Tensor& y_true, const Tensor& y_pred) const {
  auto [t, p] = detail::prepare_same_shape(class_name(), y_true, y_pred);
  const ops::Axes axis = detail::checked_axes(class_name(), axis_, p.rank());
  const Tensor intersection = ops::reduce_sum(t * p, axis);
  const Tensor dice = (2.0 * intersection) / ((ops::reduce_sum(t, axis) + ops::reduce_sum(p, axis)) + 1e-7);
  return 1.0 - dice;
}

nlohmann::json Dice::get_config() const {
  nlohmann::json c = Loss::get_config();
  c["axis"] = detail::axis_option_to_json(axis_);
  return c;
}

LossPtr Dice::from_config(const nlohmann::json& config) {
  auto base = detail::read_base_config(config, "Dice", kDiceName, {"axis"});
  return std::make_shared<Dice>(
      DiceOptions{.reduction = base.reduction, .name = base.name, .axis = detail::config_axis_option(config, "axis", "Dice")});
}

}  // namespace ember::losses
