#pragma once
// Maximum (Keras: keras.layers.Maximum): the elementwise largest value of its inputs.
#include "layers/merge.h"

namespace ember::layers {

class Maximum : public Merge {
  EMBER_LAYER(Maximum)
  explicit Maximum(LayerOptions options = {}) : Merge("maximum", options) {}
  static LayerPtr from_config(const nlohmann::json& config);

 protected:
  Tensor merge_function(const std::vector<Tensor>& xs) const override;
};

}  // namespace ember::layers
