#pragma once
// AveragePooling1D (Keras: keras.layers.AveragePooling1D): the mean over pool_size windows of a (batch, steps,
// channels) input; pool_size has no default, as in Keras.
#include "layers/base_pooling1d.h"

namespace ember::layers {

using AveragePooling1DOptions = Pooling1DOptions;

class AveragePooling1D : public Pooling1D {
  EMBER_LAYER(AveragePooling1D)
  explicit AveragePooling1D(int64_t pool_size, AveragePooling1DOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

 protected:
  Tensor pool(const Tensor& x4) const override;
};

}  // namespace ember::layers
