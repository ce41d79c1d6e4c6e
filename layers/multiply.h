#pragma once
// Multiply (Keras: keras.layers.Multiply): the elementwise product of its inputs.
#include "layers/merge.h"

namespace ember::layers {

class Multiply : public Merge {
  EMBER_LAYER(Multiply)
  explicit Multiply(LayerOptions options = {}) : Merge("multiply", options) {}
  static LayerPtr from_config(const nlohmann::json& config);

 protected:
  Tensor merge_function(const std::vector<Tensor>& xs) const override;
};

}  // namespace ember::layers
