#pragma once
// LeakyReLU (Keras: keras.layers.LeakyReLU): x where x > 0, else negative_slope * x.
#include <string>
#include <vector>

#include "framework/model/layer.h"

namespace ember::layers {

struct LeakyReLUOptions {
  double negative_slope = 0.3;  // >= 0 (Keras 3's default; tf-keras spelled it `alpha`)
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class LeakyReLU : public Layer {
  EMBER_LAYER(LeakyReLU)
  explicit LeakyReLU(LeakyReLUOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

  Tensor call(const Tensor& x, bool training) override;
  Shape compute_output_shape(const Shape& input_shape) override { return input_shape; }
  // No input spec in Keras: any shape is accepted after the first call.
  void check_input_shape(const std::vector<Shape>& /*input_shapes*/) const override {}
  nlohmann::json get_config() const override;

 private:
  LeakyReLUOptions options_;
};

}  // namespace ember::layers
