#include "layers/leaky_relu.h"

#include <cmath>

#include "framework/core/config_reader.h"
#include "framework/model/activations.h"

namespace ember::layers {

LeakyReLU::LeakyReLU(LeakyReLUOptions options)
    : Layer("leaky_re_lu", {options.name, options.dtype, options.trainable}), options_(std::move(options)) {
  supports_masking_ = true;  // passes its input's mask on (Keras)
  EMBER_CHECK(std::isfinite(options_.negative_slope) && options_.negative_slope >= 0, InvalidArgument)
      << "LeakyReLU '" << name() << "': negative_slope must be a finite number >= 0, got " << options_.negative_slope;
}

Tensor LeakyReLU::call(const Tensor& x, bool training) { return activations::leaky_relu(x, options_.negative_slope); }

nlohmann::json LeakyReLU::get_config() const {
  nlohmann::json c = base_config();
  c["negative_slope"] = options_.negative_slope;
  return c;
}

LayerPtr LeakyReLU::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const std::string who = "LeakyReLU '" + base.name + "'";
  LeakyReLUOptions o;
  // tf-keras wrote the slope as "alpha" (default 0.3 there too); Keras 3 still reads it.
  const char* key = c.contains("negative_slope") ? "negative_slope" : "alpha";
  EMBER_CHECK(!c.contains(key) || !c[key].is_null(), InvalidArgument)
      << who << ": config \"" << key << "\" cannot be null (expected a number >= 0)";
  o.negative_slope = ::ember::detail::config_double(c, key, o.negative_slope, who);
  o.name = base.name;
  o.dtype = base.dtype;
  o.trainable = base.trainable;
  return std::make_shared<LeakyReLU>(o);
}

EMBER_REGISTER_LAYER(LeakyReLU);

}  // namespace ember::layers
