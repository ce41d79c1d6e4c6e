#pragma once
// Identity (Keras: keras.layers.Identity): returns its input unchanged (a placeholder, e.g. for a removed
// block).
#include <vector>

#include "framework/model/layer.h"

namespace ember::layers {

class Identity : public Layer {
  EMBER_LAYER(Identity)
  explicit Identity(LayerOptions options = {}) : Layer("identity", options) { supports_masking_ = true; }
  static LayerPtr from_config(const nlohmann::json& config);

  Tensor call(const Tensor& x, bool training) override { return x; }
  Shape compute_output_shape(const Shape& input_shape) override { return input_shape; }
  // No input spec in Keras: any shape is accepted after the first call.
  void check_input_shape(const std::vector<Shape>& /*input_shapes*/) const override {}
};

}  // namespace ember::layers
