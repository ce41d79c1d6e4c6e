#include "layers/subtract.h"

#include "framework/ops/elementwise.h"

namespace ember::layers {

Tensor Subtract::merge_function(const std::vector<Tensor>& xs) const {
  return xs[0] - xs[1];
}

Shape Subtract::merged_shape(const std::vector<Shape>& shapes) const {
  EMBER_CHECK(shapes.size() == 2, InvalidArgument) << who() << ": expected exactly 2 inputs, got " << shapes.size();
  return Merge::merged_shape(shapes);
}

LayerPtr Subtract::from_config(const nlohmann::json& c) { return std::make_shared<Subtract>(options_from_config(c)); }

EMBER_REGISTER_LAYER(Subtract);

}  // namespace ember::layers
