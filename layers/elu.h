#pragma once
// ELU (Keras: keras.layers.ELU): x where x > 0, else alpha * (exp(x) - 1).
#include <string>
#include <vector>

#include "framework/model/layer.h"

namespace ember::layers {

struct ELUOptions {
  double alpha = 1.0;
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class ELU : public Layer {
  EMBER_LAYER(ELU)
  explicit ELU(ELUOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

  Tensor call(const Tensor& x, bool training) override;
  Shape compute_output_shape(const Shape& input_shape) override { return input_shape; }
  // No input spec in Keras: any shape is accepted after the first call.
  void check_input_shape(const std::vector<Shape>& /*input_shapes*/) const override {}
  nlohmann::json get_config() const override;

 private:
  ELUOptions options_;
};

}  // namespace ember::layers
