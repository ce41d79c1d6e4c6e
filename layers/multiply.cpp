#include "layers/multiply.h"

#include "framework/ops/elementwise.h"

namespace ember::layers {

Tensor Multiply::merge_function(const std::vector<Tensor>& xs) const {
  Tensor y = xs[0];
  for (size_t i = 1; i < xs.size(); ++i) y = y * xs[i];
  return y;
}

LayerPtr Multiply::from_config(const nlohmann::json& c) { return std::make_shared<Multiply>(options_from_config(c)); }

EMBER_REGISTER_LAYER(Multiply);

}  // namespace ember::layers
