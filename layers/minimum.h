#pragma once
// Minimum (Keras: keras.layers.Minimum): the elementwise smallest value of its inputs.
#include "layers/merge.h"

namespace ember::layers {

class Minimum : public Merge {
  EMBER_LAYER(Minimum)
  explicit Minimum(LayerOptions options = {}) : Merge("minimum", options) {}
  static LayerPtr from_config(const nlohmann::json& config);

 protected:
  Tensor merge_function(const std::vector<Tensor>& xs) const override;
};

}  // namespace ember::layers
