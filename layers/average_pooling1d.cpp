#include "layers/average_pooling1d.h"

#include "framework/ops/nn.h"

namespace ember::layers {

AveragePooling1D::AveragePooling1D(int64_t pool_size, AveragePooling1DOptions options)
    : Pooling1D("average_pooling1d", pool_size, std::move(options)) {
  validate();
}

Tensor AveragePooling1D::pool(const Tensor& x4) const {
  return ops::avg_pool2d(x4, {1, pool_size_}, {.strides = {1, options_.strides}, .padding = options_.padding});
}

LayerPtr AveragePooling1D::from_config(const nlohmann::json& c) {
  auto [pool_size, options] = parse_config(c, "AveragePooling1D");
  return std::make_shared<AveragePooling1D>(pool_size, options);
}

EMBER_REGISTER_LAYER(AveragePooling1D);

}  // namespace ember::layers
