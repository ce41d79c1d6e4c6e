#pragma once
// MaxPooling2D (Keras: keras.layers.MaxPooling2D): the maximum over pool_size windows of an NHWC input.
#include "layers/base_pooling2d.h"

namespace ember::layers {

using MaxPooling2DOptions = Pooling2DOptions;

class MaxPooling2D : public Pooling2D {
  EMBER_LAYER(MaxPooling2D)
  explicit MaxPooling2D(Size2 pool_size = 2, MaxPooling2DOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

 protected:
  Tensor pool(const Tensor& x) const override;
};

}  // namespace ember::layers
