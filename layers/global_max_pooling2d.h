#pragma once
// GlobalMaxPooling2D (Keras: keras.layers.GlobalMaxPooling2D): the maximum over height and width.
#include "layers/base_global_pooling.h"

namespace ember::layers {

using GlobalMaxPooling2DOptions = GlobalPooling2DOptions;

class GlobalMaxPooling2D : public GlobalPooling2D {
  EMBER_LAYER(GlobalMaxPooling2D)
  explicit GlobalMaxPooling2D(GlobalMaxPooling2DOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

 protected:
  Tensor reduce(const Tensor& x) const override;
};

}  // namespace ember::layers
