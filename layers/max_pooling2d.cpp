#include "layers/max_pooling2d.h"

#include "framework/ops/nn.h"

namespace ember::layers {

MaxPooling2D::MaxPooling2D(Size2 pool_size, MaxPooling2DOptions options)
    : Pooling2D("max_pooling2d", pool_size, std::move(options)) {
  validate();
}

Tensor MaxPooling2D::pool(const Tensor& x) const {
  return ops::max_pool2d(x, pool_size_.array(), {.strides = options_.strides.array(), .padding = options_.padding});
}

LayerPtr MaxPooling2D::from_config(const nlohmann::json& c) {
  auto [pool_size, options] = parse_config(c, "MaxPooling2D");
  return std::make_shared<MaxPooling2D>(pool_size, options);
}

EMBER_REGISTER_LAYER(MaxPooling2D);

}  // namespace ember::layers
