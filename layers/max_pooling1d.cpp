#include "layers/max_pooling1d.h"

#include "framework/ops/nn.h"

namespace ember::layers {

MaxPooling1D::MaxPooling1D(int64_t pool_size, MaxPooling1DOptions options)
    : Pooling1D("max_pooling1d", pool_size, std::move(options)) {
  validate();
}

Tensor MaxPooling1D::pool(const Tensor& x4) const {
  return ops::max_pool2d(x4, {1, pool_size_}, {.strides = {1, options_.strides}, .padding = options_.padding});
}

LayerPtr MaxPooling1D::from_config(const nlohmann::json& c) {
  auto [pool_size, options] = parse_config(c, "MaxPooling1D");
  return std::make_shared<MaxPooling1D>(pool_size, options);
}

EMBER_REGISTER_LAYER(MaxPooling1D);

}  // namespace ember::layers
