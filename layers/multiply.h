#pragma once
// Multiply (Keras: keras.layers.Multiply): the elementwise product of its inputs.
#include "layers/merge.h"

namespace ember::layers {

class Multiply : public Merge {
  EMBER_LAYER(Multiply)
  explicit Multiply(LayerOptions options = {}) : Merge("multiply", options) {}
  static LayerPtr from_config(const nlohmann::json& config);
  // Keras: a masked entry counts as 1 in the product; when every input has a mask, the entries no mask keeps
  // are 0 and the output's mask is the masks or-ed.
  std::vector<Tensor> call_masked(const std::vector<Tensor>& xs, const std::vector<Tensor>& masks,
                                  bool training) override;

 protected:
  Tensor merge_function(const std::vector<Tensor>& xs) const override;
};

}  // namespace ember::layers
