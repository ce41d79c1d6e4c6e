#include "layers/global_average_pooling1d.h"

#include "framework/ops/reduce.h"

namespace ember::layers {

GlobalAveragePooling1D::GlobalAveragePooling1D(GlobalAveragePooling1DOptions options)
    : GlobalPooling1D("global_average_pooling1d", std::move(options)) {
  validate();
}

Tensor GlobalAveragePooling1D::reduce(const Tensor& x) const { return ops::reduce_mean(x, {1}, options_.keepdims); }

LayerPtr GlobalAveragePooling1D::from_config(const nlohmann::json& c) {
  return std::make_shared<GlobalAveragePooling1D>(parse_config(c, "GlobalAveragePooling1D"));
}

EMBER_REGISTER_LAYER(GlobalAveragePooling1D);

}  // namespace ember::layers
