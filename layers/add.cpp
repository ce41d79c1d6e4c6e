#include "layers/add.h"

#include "framework/ops/elementwise.h"

namespace ember::layers {

Tensor Add::merge_function(const std::vector<Tensor>& xs) const {
  Tensor y = xs[0];
  for (size_t i = 1; i < xs.size(); ++i) y = y + xs[i];
  return y;
}

LayerPtr Add::from_config(const nlohmann::json& c) { return std::make_shared<Add>(options_from_config(c)); }

EMBER_REGISTER_LAYER(Add);

}  // namespace ember::layers
