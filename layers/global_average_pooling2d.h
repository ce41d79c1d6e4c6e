#pragma once
// GlobalAveragePooling2D (Keras: keras.layers.GlobalAveragePooling2D): the mean over height and width.
#include "layers/base_global_pooling.h"

namespace ember::layers {

using GlobalAveragePooling2DOptions = GlobalPooling2DOptions;

class GlobalAveragePooling2D : public GlobalPooling2D {
  EMBER_LAYER(GlobalAveragePooling2D)
  explicit GlobalAveragePooling2D(GlobalAveragePooling2DOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

 protected:
  Tensor reduce(const Tensor& x) const override;
};

}  // namespace ember::layers
