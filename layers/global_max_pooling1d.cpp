#include "layers/global_max_pooling1d.h"

#include "framework/ops/reduce.h"

namespace ember::layers {

GlobalMaxPooling1D::GlobalMaxPooling1D(GlobalMaxPooling1DOptions options)
    : GlobalPooling1D("global_max_pooling1d", std::move(options)) {
  validate();
}

Tensor GlobalMaxPooling1D::reduce(const Tensor& x) const { return ops::reduce_max(x, {1}, options_.keepdims); }

LayerPtr GlobalMaxPooling1D::from_config(const nlohmann::json& c) {
  return std::make_shared<GlobalMaxPooling1D>(parse_config(c, "GlobalMaxPooling1D"));
}

EMBER_REGISTER_LAYER(GlobalMaxPooling1D);

}  // namespace ember::layers
