#include "layers/global_average_pooling2d.h"

#include "framework/ops/reduce.h"

namespace ember::layers {

GlobalAveragePooling2D::GlobalAveragePooling2D(GlobalAveragePooling2DOptions options)
    : GlobalPooling2D("global_average_pooling2d", std::move(options)) {
  validate();
}

Tensor GlobalAveragePooling2D::reduce(const Tensor& x) const {
  return ops::reduce_mean(x, {1, 2}, options_.keepdims);
}

LayerPtr GlobalAveragePooling2D::from_config(const nlohmann::json& c) {
  return std::make_shared<GlobalAveragePooling2D>(parse_config(c, "GlobalAveragePooling2D"));
}

EMBER_REGISTER_LAYER(GlobalAveragePooling2D);

}  // namespace ember::layers
