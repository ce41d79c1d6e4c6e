#include "layers/average.h"

#include "framework/ops/elementwise.h"

namespace ember::layers {

Tensor Average::merge_function(const std::vector<Tensor>& xs) const {
  Tensor y = xs[0];
  for (size_t i = 1; i < xs.size(); ++i) y = y + xs[i];
  return y / static_cast<double>(xs.size());  // the sum, then one division, as Keras
}

LayerPtr Average::from_config(const nlohmann::json& c) { return std::make_shared<Average>(options_from_config(c)); }

EMBER_REGISTER_LAYER(Average);

}  // namespace ember::layers
