#include "layers/elu.h"

#include <cmath>

#include "framework/core/config_reader.h"
#include "framework/model/activations.h"

namespace ember::layers {

ELU::ELU(ELUOptions options) : Layer("elu", {options.name, options.dtype, options.trainable}), options_(std::move(options)) {
  supports_masking_ = true;  // passes its input's mask on (Keras)
  EMBER_CHECK(std::isfinite(options_.alpha), InvalidArgument)
      << "ELU '" << name() << "': alpha must be a finite number, got " << options_.alpha;
}

Tensor ELU::call(const Tensor& x, bool training) { return activations::elu(x, options_.alpha); }

nlohmann::json ELU::get_config() const {
  nlohmann::json c = base_config();
  c["alpha"] = options_.alpha;
  return c;
}

LayerPtr ELU::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  ELUOptions o;
  o.alpha = ::ember::detail::config_double(c, "alpha", o.alpha, "ELU '" + base.name + "'");
  o.name = base.name;
  o.dtype = base.dtype;
  o.trainable = base.trainable;
  return std::make_shared<ELU>(o);
}

EMBER_REGISTER_LAYER(ELU);

}  // namespace ember::layers
