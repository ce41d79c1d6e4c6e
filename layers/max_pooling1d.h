#pragma once
// MaxPooling1D (Keras: keras.layers.MaxPooling1D): the maximum over pool_size windows of a (batch, steps,
// channels) input.
#include "layers/base_pooling1d.h"

namespace ember::layers {

using MaxPooling1DOptions = Pooling1DOptions;

class MaxPooling1D : public Pooling1D {
  EMBER_LAYER(MaxPooling1D)
  explicit MaxPooling1D(int64_t pool_size = 2, MaxPooling1DOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

 protected:
  Tensor pool(const Tensor& x4) const override;
};

}  // namespace ember::layers
