#pragma once
// UpSampling2D (Keras: keras.layers.UpSampling2D): repeats the rows and columns of an NHWC input size.h and size.w
// times ("nearest"), or resizes it bilinearly ("bilinear": tf.image.resize's half-pixel-centre weights, as Keras
// 3 calls it).
#include <string>

#include "framework/model/layer.h"
#include "layers/conv_utils.h"

namespace ember::layers {

struct UpSampling2DOptions {
  std::string data_format = "channels_last";  // channels_first is rejected (NHWC only)
  std::string interpolation = "nearest";      // "nearest" or "bilinear" (Keras's other resize methods are rejected)
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class UpSampling2D : public Layer {
  EMBER_LAYER(UpSampling2D)
  explicit UpSampling2D(Size2 size = 2, UpSampling2DOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

  Tensor call(const Tensor& x, bool training) override;
  Shape compute_output_shape(const Shape& input_shape) override;
  // Keras's input spec is only ndim=4.
  void check_input_shape(const std::vector<Shape>& input_shapes) const override;
  nlohmann::json get_config() const override;

  const Size2& size() const { return size_; }
  const UpSampling2DOptions& options() const { return options_; }

 private:
  Size2 size_;
  UpSampling2DOptions options_;
};

}  // namespace ember::layers
