// CategoricalCrossentropy (keras/src/losses/losses.py categorical_crossentropy;
// keras/src/backend/tensorflow/nn.py categorical_crossentropy; TF's softmax_cross_entropy_with_logits).
#include "losses/categorical_crossentropy.h"

#include "framework/ops/elementwise.h"
#include "framework/ops/nn.h"
#include "framework/ops/reduce.h"
#include "framework/ops/tensor_helpers.h"
#include "losses/loss_utils.h"

namespace ember::losses {

namespace {
constexpr const char* kCategoricalCrossentropyName = "categorical_crossentropy";
[[maybe_unused]] const bool categorical_crossentropy_registered = detail::register_loss(
    "CategoricalCrossentropy", &CategoricalCrossentropy::from_config, {"categorical_crossentropy"});
}  // namespace

CategoricalCrossentropy::CategoricalCrossentropy(CategoricalCrossentropyOptions options)
    : Loss(detail::name_or(options.name, kCategoricalCrossentropyName), options.reduction, "CategoricalCrossentropy"), options_(options) {
  detail::check_label_smoothing("CategoricalCrossentropy", options_.label_smoothing);
}

Tensor CategoricalCrossentropy::call(const Tensor& y_true, const Tensor& y_pred) const {
  auto [t, p] = detail::prepare_same_shape(class_name(), y_true, y_pred);
  EMBER_CHECK(p.rank() >= 1, InvalidArgument)
      << "CategoricalCrossentropy: y_true and y_pred must be at least rank 1, got shape " << p.shape();
  const int64_t axis = normalize_axis(options_.axis, p.rank(), "CategoricalCrossentropy");
  t = detail::smooth_categorical_labels(t, options_.label_smoothing);
  if (options_.from_logits) return -ops::reduce_sum(t * ops::log_softmax(p, axis), axis);
  return -ops::reduce_sum(t * ops::log(detail::clipped_class_probabilities(p, axis)), axis);
}

nlohmann::json CategoricalCrossentropy::get_config() const {
  nlohmann::json c = Loss::get_config();
  c["from_logits"] = options_.from_logits;
  c["label_smoothing"] = options_.label_smoothing;
  c["axis"] = options_.axis;
  return c;
}

LossPtr CategoricalCrossentropy::from_config(const nlohmann::json& config) {
  const char* who = "CategoricalCrossentropy";
  auto base = detail::read_base_config(config, who, kCategoricalCrossentropyName, {"from_logits", "label_smoothing", "axis"});
  return std::make_shared<CategoricalCrossentropy>(CategoricalCrossentropyOptions{
      .from_logits = detail::config_bool(config, "from_logits", false, who),
      .label_smoothing = detail::config_double(config, "label_smoothing", 0.0, who),
      .axis = detail::config_int(config, "axis", -1, who),
      .reduction = base.reduction,
      .name = base.name});
}

}  // namespace ember::losses
