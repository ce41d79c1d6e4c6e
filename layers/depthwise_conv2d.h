#pragma once
// DepthwiseConv2D (Keras: keras.layers.DepthwiseConv2D): each input channel convolved with its own
// depth_multiplier filters, output channel c * depth_multiplier + m. Kernel (kh, kw, in_channels,
// depth_multiplier) as Keras lays it out; runs as ops::conv2d with groups = in_channels.
#include <string>

#include "framework/model/layer.h"
#include "layers/conv_utils.h"

namespace ember::layers {

struct DepthwiseConv2DOptions {
  Size2 strides = 1;
  std::string padding = "valid";  // "valid" or "same"
  int64_t depth_multiplier = 1;
  std::string data_format = "channels_last";  // channels_first is rejected (NHWC only)
  Size2 dilation_rate = 1;
  std::string activation{};  // Keras name; empty = linear
  bool use_bias = true;
  Initializer depthwise_initializer = "glorot_uniform";
  Initializer bias_initializer = "zeros";
  Regularizer depthwise_regularizer{};
  Regularizer bias_regularizer{};
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class DepthwiseConv2D : public Layer {
  EMBER_LAYER(DepthwiseConv2D)
  explicit DepthwiseConv2D(Size2 kernel_size, DepthwiseConv2DOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;
  Shape compute_output_shape(const Shape& input_shape) override;
  void check_input_shape(const std::vector<Shape>& input_shapes) const override;
  nlohmann::json get_config() const override;

  const Size2& kernel_size() const { return kernel_size_; }
  const DepthwiseConv2DOptions& options() const { return options_; }
  // Keras 3 names it "kernel" (tf.keras: "depthwise_kernel").
  const Variable& kernel() const { return kernel_; }
  const Variable& bias() const { return bias_; }

 private:
  Size2 kernel_size_;
  DepthwiseConv2DOptions options_;
  Variable kernel_, bias_;
};

}  // namespace ember::layers
