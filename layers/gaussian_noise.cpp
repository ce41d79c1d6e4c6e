#include "layers/gaussian_noise.h"

#include "framework/core/config_reader.h"
#include "framework/ops/elementwise.h"

namespace ember::layers {

GaussianNoise::GaussianNoise(double stddev, GaussianNoiseOptions options)
    : Layer("gaussian_noise", {options.name, options.dtype, options.trainable}),
      stddev_(stddev),
      options_(std::move(options)),
      noise_(options_.seed) {
  supports_masking_ = true;  // passes its input's mask on (Keras)
  EMBER_CHECK(stddev >= 0 && stddev <= 1, InvalidArgument)
      << "GaussianNoise '" << name() << "': stddev must be in [0, 1], got " << stddev;
}

// Keras: inputs + normal(shape, 0, stddev, compute dtype), only when training and stddev > 0.
Tensor GaussianNoise::call(const Tensor& x, bool training) {
  if (!training || stddev_ == 0) return x;
  return x + noise_.normal(x.shape(), x.dtype(), 0.0, stddev_);
}

nlohmann::json GaussianNoise::get_config() const {
  nlohmann::json c = base_config();
  c["stddev"] = stddev_;
  c["seed"] = seed_to_config(options_.seed);
  return c;
}

LayerPtr GaussianNoise::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const std::string who = "GaussianNoise '" + base.name + "'";
  GaussianNoiseOptions o;
  o.seed = seed_from_config(c, who);
  o.name = base.name;
  o.dtype = base.dtype;
  o.trainable = base.trainable;
  return std::make_shared<GaussianNoise>(::ember::detail::config_required_double(c, "stddev", who), o);
}

EMBER_REGISTER_LAYER(GaussianNoise);

}  // namespace ember::layers
