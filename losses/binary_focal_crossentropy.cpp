// BinaryFocalCrossentropy (keras/src/losses/losses.py binary_focal_crossentropy).
#include "losses/binary_focal_crossentropy.h"

#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "framework/ops/tensor_helpers.h"
#include "losses/loss_utils.h"

namespace ember::losses {

namespace {
constexpr const char* kBinaryFocalCrossentropyName = "binary_focal_crossentropy";
[[maybe_unused]] const bool binary_focal_crossentropy_registered = detail::register_loss(
    "BinaryFocalCrossentropy", &BinaryFocalCrossentropy::from_config, {"binary_focal_crossentropy"});
}  // namespace

BinaryFocalCrossentropy::BinaryFocalCrossentropy(BinaryFocalCrossentropyOptions options)
    : Loss(detail::name_or(options.name, kBinaryFocalCrossentropyName), options.reduction, "BinaryFocalCrossentropy"),
      options_(options) {
  detail::check_label_smoothing("BinaryFocalCrossentropy", options_.label_smoothing);
}

Tensor BinaryFocalCrossentropy::call(const Tensor& y_true, const Tensor& y_pred) const {
  auto [z, x] = detail::prepare_same_shape(class_name(), y_true, y_pred);
  const int64_t axis = normalize_axis(options_.axis, x.rank(), "BinaryFocalCrossentropy");
  z = detail::smooth_binary_labels(z, options_.label_smoothing);
  // From logits, Keras's sigmoid output carries its logits, so the crossentropy takes TF's stable logits
  // form while the focal factor uses the probabilities; from probabilities the crossentropy clips them
  // and the focal factor does not.
  const Tensor p = options_.from_logits ? ops::sigmoid(x) : x;
  const Tensor bce = detail::binary_crossentropy(z, x, options_.from_logits);
  const Tensor p_t = z * p + (1.0 - z) * (1.0 - p);
  const Tensor focal_factor = ops::pow(1.0 - p_t, ops::f32(options_.gamma));
  Tensor focal_bce = focal_factor * bce;
  if (options_.apply_class_balancing) {
    const double a = options_.alpha;
    focal_bce = (z * a + (1.0 - z) * (1.0 - a)) * focal_bce;
  }
  return ops::reduce_mean(focal_bce, axis);
}

nlohmann::json BinaryFocalCrossentropy::get_config() const {
  nlohmann::json c = Loss::get_config();
  c["from_logits"] = options_.from_logits;
  c["label_smoothing"] = options_.label_smoothing;
  c["axis"] = options_.axis;
  c["apply_class_balancing"] = options_.apply_class_balancing;
  c["alpha"] = options_.alpha;
  c["gamma"] = options_.gamma;
  return c;
}

LossPtr BinaryFocalCrossentropy::from_config(const nlohmann::json& config) {
  const char* who = "BinaryFocalCrossentropy";
  auto base = detail::read_base_config(config, who, kBinaryFocalCrossentropyName,
                                       {"apply_class_balancing", "alpha", "gamma", "from_logits", "label_smoothing", "axis"});
  return std::make_shared<BinaryFocalCrossentropy>(BinaryFocalCrossentropyOptions{
      .apply_class_balancing = detail::config_bool(config, "apply_class_balancing", false, who),
      .alpha = detail::config_double(config, "alpha", 0.25, who),
      .gamma = detail::config_double(config, "gamma", 2.0, who),
      .from_logits = detail::config_bool(config, "from_logits", false, who),
      .label_smoothing = detail::config_double(config, "label_smoothing", 0.0, who),
      .axis = detail::config_int(config, "axis", -1, who),
      .reduction = base.reduction,
      .name = base.name});
}

}  // namespace ember::losses
