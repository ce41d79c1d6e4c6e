#include "layers/masking.h"

#include "framework/core/config_reader.h"
#include "framework/ops/array.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"

namespace ember::layers {

Masking::Masking(MaskingOptions options)
    : Layer("masking", {options.name, options.dtype, options.trainable}), options_(std::move(options)) {
  supports_masking_ = true;
}

Tensor Masking::step_mask(const Tensor& x, bool keepdims) const {
  EMBER_CHECK(x.rank() >= 1, InvalidArgument)
      << "Masking '" << name() << "': expected an input with a feature axis, got shape " << x.shape().to_keras_string();
  return ops::reduce_any(ops::not_equal(x, Tensor::scalar_of(options_.mask_value, x.dtype())), {-1}, keepdims);
}

Tensor Masking::call(const Tensor& x, bool /*training*/) {
  // Keras computes the output and its mask together: masked steps become zeros.
  Tensor keep = step_mask(x, true);
  Tensor out = ops::mul(x, ops::cast(keep, x.dtype()));
  backend::set_keras_mask(out, ops::squeeze(keep, {-1}));
  return out;
}

std::vector<Tensor> Masking::compute_mask(const std::vector<Tensor>& xs, const std::vector<Tensor>& /*masks*/) {
  return {step_mask(xs.at(0), false)};
}

nlohmann::json Masking::get_config() const {
  nlohmann::json c = base_config();
  c["mask_value"] = options_.mask_value;
  return c;
}

LayerPtr Masking::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  MaskingOptions o;
  o.mask_value = ::ember::detail::config_double(c, "mask_value", 0.0, "Masking '" + base.name + "'");
  o.name = base.name;
  o.dtype = base.dtype;
  o.trainable = base.trainable;
  return std::make_shared<Masking>(o);
}

EMBER_REGISTER_LAYER(Masking);

}  // namespace ember::layers
