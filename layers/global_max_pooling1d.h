#pragma once
// GlobalMaxPooling1D (Keras: keras.layers.GlobalMaxPooling1D): the maximum over the steps.
#include "layers/base_global_pooling.h"

namespace ember::layers {

using GlobalMaxPooling1DOptions = GlobalPooling1DOptions;

class GlobalMaxPooling1D : public GlobalPooling1D {
  EMBER_LAYER(GlobalMaxPooling1D)
  explicit GlobalMaxPooling1D(GlobalMaxPooling1DOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

 protected:
  Tensor reduce(const Tensor& x) const override;
};

}  // namespace ember::layers
