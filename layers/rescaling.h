#pragma once
// Rescaling (Keras: keras.layers.Rescaling): inputs * scale + offset in the compute dtype (integer images come
// out floating), e.g. scale 1/255 maps [0, 255] to [0, 1]. Any shape.
#include <string>
#include <vector>

#include "framework/model/layer.h"

namespace ember::layers {

struct RescalingOptions {
  double offset = 0.0;
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class Rescaling : public Layer {
  EMBER_LAYER(Rescaling)
  explicit Rescaling(double scale, RescalingOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

  Tensor call(const Tensor& x, bool training) override;
  Shape compute_output_shape(const Shape& input_shape) override { return input_shape; }
  DType compute_output_dtype(const std::vector<DType>& /*input_dtypes*/) const override { return compute_dtype(); }
  // Keras gives Rescaling no input spec.
  void check_input_shape(const std::vector<Shape>& /*input_shapes*/) const override {}
  nlohmann::json get_config() const override;

  double scale() const { return scale_; }
  double offset() const { return options_.offset; }

 private:
  double scale_;
  RescalingOptions options_;
};

}  // namespace ember::layers
