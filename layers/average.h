#pragma once
// Average (Keras: keras.layers.Average): the elementwise mean of its inputs.
#include "layers/merge.h"

namespace ember::layers {

class Average : public Merge {
  EMBER_LAYER(Average)
  explicit Average(LayerOptions options = {}) : Merge("average", options) {}
  static LayerPtr from_config(const nlohmann::json& config);

 protected:
  Tensor merge_function(const std::vector<Tensor>& xs) const override;
};

}  // namespace ember::layers
