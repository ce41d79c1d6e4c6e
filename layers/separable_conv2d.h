#pragma once
// SeparableConv2D (Keras: keras.layers.SeparableConv2D): a depthwise convolution (each input channel with its
// own depth_multiplier filters) followed by a 1x1 pointwise convolution to `filters` channels, then bias and
// activation. Weights as Keras: depthwise_kernel (kh, kw, in, depth_multiplier), pointwise_kernel
// (1, 1, in * depth_multiplier, filters), bias (filters). Runs as two ops::conv2d, as tf.nn.separable_conv2d.
#include <string>

#include "framework/model/layer.h"
#include "layers/conv_utils.h"

namespace ember::layers {

struct SeparableConv2DOptions {
  Size2 strides = 1;
  std::string padding = "valid";              // "valid" or "same"
  std::string data_format = "channels_last";  // channels_first is rejected (NHWC only)
  Size2 dilation_rate = 1;
  int64_t depth_multiplier = 1;
  std::string activation{};  // Keras name; empty = linear
  bool use_bias = true;
  Initializer depthwise_initializer = "glorot_uniform";
  Initializer pointwise_initializer = "glorot_uniform";
  Initializer bias_initializer = "zeros";
  Regularizer depthwise_regularizer{};
  Regularizer pointwise_regularizer{};
  Regularizer bias_regularizer{};
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class SeparableConv2D : public Layer {
  EMBER_LAYER(SeparableConv2D)
  SeparableConv2D(int64_t filters, Size2 kernel_size, SeparableConv2DOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;
  Shape compute_output_shape(const Shape& input_shape) override;
  void check_input_shape(const std::vector<Shape>& input_shapes) const override;
  nlohmann::json get_config() const override;

  int64_t filters() const { return filters_; }
  const Size2& kernel_size() const { return kernel_size_; }
  const SeparableConv2DOptions& options() const { return options_; }
  const Variable& depthwise_kernel() const { return depthwise_kernel_; }
  const Variable& pointwise_kernel() const { return pointwise_kernel_; }
  const Variable& bias() const { return bias_; }

 private:
  int64_t filters_;
  Size2 kernel_size_;
  SeparableConv2DOptions options_;
  Variable depthwise_kernel_, pointwise_kernel_, bias_;
};

}  // namespace ember::layers
