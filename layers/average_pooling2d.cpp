#include "layers/average_pooling2d.h"

#include "framework/ops/nn.h"

namespace ember::layers {

AveragePooling2D::AveragePooling2D(Size2 pool_size, AveragePooling2DOptions options)
    : Pooling2D("average_pooling2d", pool_size, std::move(options)) {
  validate();
}

Tensor AveragePooling2D::pool(const Tensor& x) const {
  return ops::avg_pool2d(x, pool_size_.array(), {.strides = options_.strides.array(), .padding = options_.padding});
}

LayerPtr AveragePooling2D::from_config(const nlohmann::json& c) {
  auto [pool_size, options] = parse_config(c, "AveragePooling2D");
  return std::make_shared<AveragePooling2D>(pool_size, options);
}

EMBER_REGISTER_LAYER(AveragePooling2D);

}  // namespace ember::layers
