#include "layers/minimum.h"

#include "framework/ops/elementwise.h"

namespace ember::layers {

// Keras folds ops.minimum over the inputs from the left; ties pass the gradient as ops::minimum does (TF's rule).
Tensor Minimum::merge_function(const std::vector<Tensor>& xs) const {
  Tensor y = xs[0];
  for (size_t i = 1; i < xs.size(); ++i) y = ops::minimum(y, xs[i]);
  return y;
}

LayerPtr Minimum::from_config(const nlohmann::json& c) { return std::make_shared<Minimum>(options_from_config(c)); }

EMBER_REGISTER_LAYER(Minimum);

}  // namespace ember::layers
