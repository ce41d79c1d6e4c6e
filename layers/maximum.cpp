#include "layers/maximum.h"

#include "framework/ops/elementwise.h"

namespace ember::layers {

// Keras folds ops.maximum over the inputs from the left; ties pass the gradient as ops::maximum does (TF's rule).
Tensor Maximum::merge_function(const std::vector<Tensor>& xs) const {
  Tensor y = xs[0];
  for (size_t i = 1; i < xs.size(); ++i) y = ops::maximum(y, xs[i]);
  return y;
}

LayerPtr Maximum::from_config(const nlohmann::json& c) { return std::make_shared<Maximum>(options_from_config(c)); }

EMBER_REGISTER_LAYER(Maximum);

}  // namespace ember::layers
