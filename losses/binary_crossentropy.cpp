// BinaryCrossentropy (keras/src/losses/losses.py binary_crossentropy; keras/src/backend/tensorflow/nn.py
// binary_crossentropy; TF's sigmoid_cross_entropy_with_logits).
#include "losses/binary_crossentropy.h"

#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "losses/loss_utils.h"

namespace ember::losses {

namespace {
constexpr const char* kBinaryCrossentropyName = "binary_crossentropy";
[[maybe_unused]] const bool binary_crossentropy_registered = detail::register_loss(
    "BinaryCrossentropy", &BinaryCrossentropy::from_config, {"binary_crossentropy", "bce", "BCE"});
}  // namespace

BinaryCrossentropy::BinaryCrossentropy(BinaryCrossentropyOptions options)
    : Loss(detail::name_or(options.name, kBinaryCrossentropyName), options.reduction, "BinaryCrossentropy"), options_(options) {
  detail::check_label_smoothing("BinaryCrossentropy", options_.label_smoothing);
}

Tensor BinaryCrossentropy::call(const Tensor& y_true, const Tensor& y_pred) const {
  auto [z, x] = detail::prepare_same_shape(class_name(), y_true, y_pred);
  const int64_t axis = normalize_axis(options_.axis, x.rank(), "BinaryCrossentropy");
  z = detail::smooth_binary_labels(z, options_.label_smoothing);
  return ops::reduce_mean(detail::binary_crossentropy(z, x, options_.from_logits), axis);
}

nlohmann::json BinaryCrossentropy::get_config() const {
  nlohmann::json c = Loss::get_config();
  c["from_logits"] = options_.from_logits;
  c["label_smoothing"] = options_.label_smoothing;
  c["axis"] = options_.axis;
  return c;
}

LossPtr BinaryCrossentropy::from_config(const nlohmann::json& config) {
  const char* who = "BinaryCrossentropy";
  auto base = detail::read_base_config(config, who, kBinaryCrossentropyName, {"from_logits", "label_smoothing", "axis"});
  return std::make_shared<BinaryCrossentropy>(BinaryCrossentropyOptions{
      .from_logits = detail::config_bool(config, "from_logits", false, who),
      .label_smoothing = detail::config_double(config, "label_smoothing", 0.0, who),
      .axis = detail::config_int(config, "axis", -1, who),
      .reduction = base.reduction,
      .name = base.name});
}

}  // namespace ember::losses
