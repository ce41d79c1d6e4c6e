#include "layers/rescaling.h"

#include "framework/core/config_reader.h"
#include "framework/ops/elementwise.h"

namespace ember::layers {

Rescaling::Rescaling(double scale, RescalingOptions options)
    : Layer("rescaling", {options.name, options.dtype, options.trainable}), scale_(scale), options_(std::move(options)) {}

// Keras: cast(inputs, compute dtype) * scale + offset, the scalars cast to the compute dtype.
Tensor Rescaling::call(const Tensor& x, bool /*training*/) {
  const Tensor y = x.dtype() == compute_dtype() ? x : ops::cast(x, compute_dtype());
  return y * scale_ + options_.offset;
}

nlohmann::json Rescaling::get_config() const {
  nlohmann::json c = base_config();
  c["scale"] = scale_;
  c["offset"] = options_.offset;
  return c;
}

LayerPtr Rescaling::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const std::string who = "Rescaling '" + base.name + "'";
  for (const char* key : {"scale", "offset"})
    EMBER_CHECK(!c.contains(key) || c[key].is_number(), Unimplemented)
        << who << ": config \"" << key << "\" must be a number (Ember takes no per-channel arrays), got "
        << c[key].dump();
  RescalingOptions o{.offset = ::ember::detail::config_double(c, "offset", 0.0, who),
                     .name = base.name,
                     .dtype = base.dtype,
                     .trainable = base.trainable};
  return std::make_shared<Rescaling>(::ember::detail::config_required_double(c, "scale", who), o);
}

EMBER_REGISTER_LAYER(Rescaling);

}  // namespace ember::layers
