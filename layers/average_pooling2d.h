#pragma once
// AveragePooling2D (Keras: keras.layers.AveragePooling2D): the mean over pool_size windows of an NHWC
// input; with SAME padding each window averages only its real pixels, as TF does.
#include "layers/base_pooling2d.h"

namespace ember::layers {

using AveragePooling2DOptions = Pooling2DOptions;

class AveragePooling2D : public Pooling2D {
  EMBER_LAYER(AveragePooling2D)
  explicit AveragePooling2D(Size2 pool_size = 2, AveragePooling2DOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

 protected:
  Tensor pool(const Tensor& x) const override;
};

}  // namespace ember::layers
