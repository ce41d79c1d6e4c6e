#include "layers/relu.h"

#include "framework/core/config_reader.h"
#include "framework/model/activations.h"
#include "framework/ops/creation.h"
#include "framework/ops/elementwise.h"

namespace ember::layers {

using ::ember::detail::config_optional_double;

ReLU::ReLU(ReLUOptions options) : Layer("re_lu", {options.name, options.dtype, options.trainable}), options_(std::move(options)) {
  supports_masking_ = true;  // passes its input's mask on (Keras)
  EMBER_CHECK(!options_.max_value || *options_.max_value >= 0, InvalidArgument)
      << "ReLU '" << name() << "': max_value cannot be negative, got " << *options_.max_value;
  EMBER_CHECK(options_.negative_slope >= 0, InvalidArgument)
      << "ReLU '" << name() << "': negative_slope cannot be negative, got " << options_.negative_slope;
  EMBER_CHECK(options_.threshold >= 0, InvalidArgument)
      << "ReLU '" << name() << "': threshold cannot be negative, got " << options_.threshold;
}

// Keras 3's activations.relu, branch for branch, so results (and the gradient at the kinks) match it.
Tensor ReLU::call(const Tensor& x, bool training) {
  const double slope = options_.negative_slope, threshold = options_.threshold;
  const std::optional<double>& max_value = options_.max_value;
  auto scalar = [&](double v) { return ops::full({}, v, x.dtype()); };
  if (slope != 0 && !max_value && threshold == 0) return activations::leaky_relu(x, slope);
  Tensor negative_part;
  if (slope != 0) negative_part = ops::relu(threshold != 0 ? threshold - x : -x);
  bool clip_max = max_value.has_value();
  Tensor y;
  if (threshold != 0) {
    y = ops::where(ops::greater(x, scalar(threshold)), x, ops::zeros({}, x.dtype()));
  } else if (max_value && *max_value == 6) {
    y = ops::relu6(x);  // the native op, as Keras does
    clip_max = false;
  } else {
    y = ops::relu(x);
  }
  if (clip_max) y = ops::clip_by_value(y, 0.0, *max_value);
  if (slope != 0) y = y - negative_part * slope;
  return y;
}

nlohmann::json ReLU::get_config() const {
  nlohmann::json c = base_config();
  c["max_value"] = options_.max_value ? nlohmann::json(*options_.max_value) : nlohmann::json(nullptr);
  c["negative_slope"] = options_.negative_slope;
  c["threshold"] = options_.threshold;
  return c;
}

LayerPtr ReLU::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const std::string who = "ReLU '" + base.name + "'";
  ReLUOptions o;
  if (auto v = config_optional_double(c, "max_value", who)) o.max_value = *v;
  // tf-keras spells the slope "negative_slope" too; null means the default.
  if (auto v = config_optional_double(c, "negative_slope", who)) o.negative_slope = *v;
  if (auto v = config_optional_double(c, "threshold", who)) o.threshold = *v;
  o.name = base.name;
  o.dtype = base.dtype;
  o.trainable = base.trainable;
  return std::make_shared<ReLU>(o);
}

EMBER_REGISTER_LAYER(ReLU);

}  // namespace ember::layers
