#pragma once
// Flatten (Keras: keras.layers.Flatten): (batch, d1, d2, ...) -> (batch, d1 * d2 * ...) in channels_last
// (row-major) order; a rank-1 input becomes (batch, 1). A view, no copy.
#include <string>

#include "framework/model/layer.h"

namespace ember::layers {

struct FlattenOptions {
  std::string data_format = "channels_last";  // channels_first is rejected (NHWC only)
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class Flatten : public Layer {
  EMBER_LAYER(Flatten)
  explicit Flatten(FlattenOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

  Tensor call(const Tensor& x, bool training) override;
  Shape compute_output_shape(const Shape& input_shape) override;
  // Keras's input spec is only min_ndim=1: a built Flatten takes any per-sample shape.
  void check_input_shape(const std::vector<Shape>& input_shapes) const override;
  nlohmann::json get_config() const override;

 private:
  FlattenOptions options_;
};

}  // namespace ember::layers
