#pragma once
// ReLU (Keras: keras.layers.ReLU): max(x, 0) generalised by a ceiling (max_value), a slope below the
// threshold (negative_slope) and a threshold below which values are damped.
#include <optional>
#include <string>

#include "framework/model/layer.h"

namespace ember::layers {

struct ReLUOptions {
  std::optional<double> max_value{};  // none: no ceiling; must be >= 0
  double negative_slope = 0.0;      // >= 0
  double threshold = 0.0;           // >= 0
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class ReLU : public Layer {
  EMBER_LAYER(ReLU)
  explicit ReLU(ReLUOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

  Tensor call(const Tensor& x, bool training) override;
  Shape compute_output_shape(const Shape& input_shape) override { return input_shape; }
  // No input spec in Keras: any shape is accepted after the first call.
  void check_input_shape(const std::vector<Shape>& /*input_shapes*/) const override {}
  nlohmann::json get_config() const override;

 private:
  ReLUOptions options_;
};

}  // namespace ember::layers
