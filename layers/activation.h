#pragma once
// Activation (Keras: keras.layers.Activation): applies an activation function by Keras name.
#include <string>

#include "framework/model/activations.h"
#include "framework/model/layer.h"

namespace ember::layers {

class Activation : public Layer {
  EMBER_LAYER(Activation)
  // activation: a Keras name ("relu", "softmax", ...; "" or "linear" is the identity).
  explicit Activation(const std::string& activation, LayerOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

  Tensor call(const Tensor& x, bool /*training*/) override { return fn_(x); }
  Shape compute_output_shape(const Shape& input_shape) override { return input_shape; }
  // No input spec in Keras: any shape is accepted after the first call.
  void check_input_shape(const std::vector<Shape>& /*input_shapes*/) const override {}
  nlohmann::json get_config() const override;

  const std::string& activation() const { return activation_; }

 private:
  std::string activation_;
  activations::Activation fn_;
};

}  // namespace ember::layers
