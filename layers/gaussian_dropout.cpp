#include "layers/gaussian_dropout.h"

#include <cmath>

#include "framework/core/config_reader.h"
#include "framework/ops/elementwise.h"

namespace ember::layers {

GaussianDropout::GaussianDropout(double rate, GaussianDropoutOptions options)
    : Layer("gaussian_dropout", {options.name, options.dtype, options.trainable}),
      rate_(rate),
      options_(std::move(options)),
      noise_(options_.seed) {
  supports_masking_ = true;  // passes its input's mask on (Keras)
  EMBER_CHECK(rate >= 0 && rate < 1, InvalidArgument)
      << "GaussianDropout '" << name() << "': rate must be in [0, 1), got " << rate;
}

// Keras: inputs * normal(shape, 1, sqrt(rate / (1 - rate)), compute dtype), only when training and rate > 0.
Tensor GaussianDropout::call(const Tensor& x, bool training) {
  if (!training || rate_ == 0) return x;
  return x * noise_.normal(x.shape(), x.dtype(), 1.0, std::sqrt(rate_ / (1.0 - rate_)));
}

nlohmann::json GaussianDropout::get_config() const {
  nlohmann::json c = base_config();
  c["rate"] = rate_;
  c["seed"] = seed_to_config(options_.seed);
  return c;
}

LayerPtr GaussianDropout::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const std::string who = "GaussianDropout '" + base.name + "'";
  GaussianDropoutOptions o;
  o.seed = seed_from_config(c, who);
  o.name = base.name;
  o.dtype = base.dtype;
  o.trainable = base.trainable;
  return std::make_shared<GaussianDropout>(::ember::detail::config_required_double(c, "rate", who), o);
}

EMBER_REGISTER_LAYER(GaussianDropout);

}  // namespace ember::layers
