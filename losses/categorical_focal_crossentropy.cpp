// CategoricalFocalCrossentropy (keras/src/losses/losses.py categorical_focal_crossentropy).
#include "losses/categorical_focal_crossentropy.h"

#include <algorithm>

#include "framework/ops/elementwise.h"
#include "framework/ops/nn.h"
#include "framework/ops/reduce.h"
#include "framework/ops/tensor_helpers.h"
#include "losses/loss_utils.h"

namespace ember::losses {

namespace {
constexpr const char* kCategoricalFocalCrossentropyName = "categorical_focal_crossentropy";
[[maybe_unused]] const bool categorical_focal_crossentropy_registered = detail::register_loss(
    "CategoricalFocalCrossentropy", &CategoricalFocalCrossentropy::from_config, {"categorical_focal_crossentropy"});

FocalAlpha config_focal_alpha(const nlohmann::json& config, const char* who) {
  auto it = config.find("alpha");
  if (it == config.end() || it->is_null()) return FocalAlpha();
  if (it->is_number()) return FocalAlpha(it->get<double>());
  EMBER_CHECK(it->is_array() && std::all_of(it->begin(), it->end(), [](const nlohmann::json& v) { return v.is_number(); }),
              InvalidArgument)
      << who << ": config \"alpha\" must be a number or a list of numbers, got " << it->dump();
  return FocalAlpha(it->get<std::vector<double>>());
}
}  // namespace

CategoricalFocalCrossentropy::CategoricalFocalCrossentropy(CategoricalFocalCrossentropyOptions options)
    : Loss(detail::name_or(options.name, kCategoricalFocalCrossentropyName), options.reduction,
           "CategoricalFocalCrossentropy"),
      options_(std::move(options)) {
  detail::check_label_smoothing("CategoricalFocalCrossentropy", options_.label_smoothing);
  EMBER_CHECK(!options_.alpha.values.empty(), InvalidArgument)
      << "CategoricalFocalCrossentropy: alpha is an empty list; expected a number or one weight per class";
}

Tensor CategoricalFocalCrossentropy::call(const Tensor& y_true, const Tensor& y_pred) const {
  auto [t, p] = detail::prepare_same_shape(class_name(), y_true, y_pred);
  EMBER_CHECK(p.rank() >= 1, InvalidArgument)
      << "CategoricalFocalCrossentropy: y_true and y_pred must be at least rank 1, got shape " << p.shape();
  const int64_t axis = normalize_axis(options_.axis, p.rank(), "CategoricalFocalCrossentropy");
  const int64_t num_classes = t.shape()[t.rank() - 1];
  const std::vector<double>& alpha = options_.alpha.values;
  // Keras multiplies by alpha as it is, so a list broadcasts against the last axis.
  EMBER_CHECK(!options_.alpha.per_class || alpha.size() == 1 || static_cast<int64_t>(alpha.size()) == num_classes,
              InvalidArgument)
      << "CategoricalFocalCrossentropy: alpha has " << alpha.size() << " per-class weights but y_pred has shape "
      << y_pred.shape() << " (" << num_classes << " classes on the last axis)";
  t = detail::smooth_categorical_labels(t, options_.label_smoothing);
  if (options_.from_logits) p = ops::softmax(p, axis);
  // Keras renormalises along the class axis after the softmax too.
  const Tensor output = detail::clipped_class_probabilities(p, axis);
  const Tensor cce = -t * ops::log(output);
  const Tensor modulating_factor = ops::pow(1.0 - output, ops::f32(options_.gamma));
  Tensor alpha_t;
  if (options_.alpha.per_class) {
    std::vector<float> a(alpha.begin(), alpha.end());
    alpha_t = Tensor::from_vector<float>(a, {static_cast<int64_t>(a.size())}, p.device());
  } else {
    alpha_t = ops::f32(alpha[0]);
  }
  return ops::reduce_sum((modulating_factor * alpha_t) * cce, axis);
}

nlohmann::json CategoricalFocalCrossentropy::get_config() const {
  nlohmann::json c = Loss::get_config();
  c["from_logits"] = options_.from_logits;
  c["label_smoothing"] = options_.label_smoothing;
  c["axis"] = options_.axis;
  c["alpha"] = options_.alpha.per_class ? nlohmann::json(options_.alpha.values) : nlohmann::json(options_.alpha.values[0]);
  c["gamma"] = options_.gamma;
  return c;
}

LossPtr CategoricalFocalCrossentropy::from_config(const nlohmann::json& config) {
  const char* who = "CategoricalFocalCrossentropy";
  auto base = detail::read_base_config(config, who, kCategoricalFocalCrossentropyName,
                                       {"alpha", "gamma", "from_logits", "label_smoothing", "axis"});
  return std::make_shared<CategoricalFocalCrossentropy>(CategoricalFocalCrossentropyOptions{
      .alpha = config_focal_alpha(config, who),
      .gamma = detail::config_double(config, "gamma", 2.0, who),
      .from_logits = detail::config_bool(config, "from_logits", false, who),
      .label_smoothing = detail::config_double(config, "label_smoothing", 0.0, who),
      .axis = detail::config_int(config, "axis", -1, who),
      .reduction = base.reduction,
      .name = base.name});
}

}  // namespace ember::losses
