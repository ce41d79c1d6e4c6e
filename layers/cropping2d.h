#pragma once
// Cropping2D (Keras: keras.layers.Cropping2D): drops rows above/below and columns left/right of an NHWC input.
#include <string>

#include "framework/model/layer.h"
#include "layers/zero_padding2d.h"

namespace ember::layers {

struct Cropping2DOptions {
  std::string data_format = "channels_last";  // channels_first is rejected (NHWC only)
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class Cropping2D : public Layer {
  EMBER_LAYER(Cropping2D)
  // cropping takes ZeroPadding2D's three forms: one int for all four sides, {h, w} symmetric per axis, or
  // {{top, bottom}, {left, right}}.
  explicit Cropping2D(Padding2D cropping = 0, Cropping2DOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

  Tensor call(const Tensor& x, bool training) override;
  // The cropped sides must leave at least one row and one column (Keras's check).
  Shape compute_output_shape(const Shape& input_shape) override;
  // Keras's input spec is only ndim=4.
  void check_input_shape(const std::vector<Shape>& input_shapes) const override;
  nlohmann::json get_config() const override;

  const Padding2D& cropping() const { return cropping_; }

 private:
  Padding2D cropping_;
  Cropping2DOptions options_;
};

}  // namespace ember::layers
