#include "layers/global_max_pooling2d.h"

#include "framework/ops/reduce.h"

namespace ember::layers {

GlobalMaxPooling2D::GlobalMaxPooling2D(GlobalMaxPooling2DOptions options)
    : GlobalPooling2D("global_max_pooling2d", std::move(options)) {
  validate();
}

Tensor GlobalMaxPooling2D::reduce(const Tensor& x) const {
  return ops::reduce_max(x, {1, 2}, options_.keepdims);
}

LayerPtr GlobalMaxPooling2D::from_config(const nlohmann::json& c) {
  return std::make_shared<GlobalMaxPooling2D>(parse_config(c, "GlobalMaxPooling2D"));
}

EMBER_REGISTER_LAYER(GlobalMaxPooling2D);

}  // namespace ember::layers
