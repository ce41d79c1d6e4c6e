#pragma once
// Add (Keras: keras.layers.Add): the elementwise sum of its inputs.
#include "layers/merge.h"

namespace ember::layers {

class Add : public Merge {
  EMBER_LAYER(Add)
  explicit Add(LayerOptions options = {}) : Merge("add", options) {}
  static LayerPtr from_config(const nlohmann::json& config);

 protected:
  Tensor merge_function(const std::vector<Tensor>& xs) const override;
};

}  // namespace ember::layers
