#pragma once
// Subtract (Keras: keras.layers.Subtract): inputs[0] - inputs[1], for exactly two inputs.
#include "layers/merge.h"

namespace ember::layers {

class Subtract : public Merge {
  EMBER_LAYER(Subtract)
  explicit Subtract(LayerOptions options = {}) : Merge("subtract", options) {}
  static LayerPtr from_config(const nlohmann::json& config);

 protected:
  Tensor merge_function(const std::vector<Tensor>& xs) const override;
  Shape merged_shape(const std::vector<Shape>& shapes) const override;
};

}  // namespace ember::layers
