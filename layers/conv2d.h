#pragma once
// Conv2D (Keras: keras.layers.Conv2D): activation(conv2d(x, kernel) + bias) over NHWC inputs, kernel HWIO
// (kh, kw, in_channels / groups, filters) as Keras lays it out; runs on ops::conv2d (oneDNN on the CPU).
#include <string>

#include "framework/model/layer.h"
#include "layers/conv_utils.h"

namespace ember::layers {

struct Conv2DOptions {
  Size2 strides = 1;
  std::string padding = "valid";              // "valid" or "same" (TF's rule: extra pixel bottom/right)
  std::string data_format = "channels_last";  // channels_first is rejected (NHWC only)
  Size2 dilation_rate = 1;
  int64_t groups = 1;
  std::string activation{};  // Keras name; empty = linear
  bool use_bias = true;
  Initializer kernel_initializer = "glorot_uniform";
  Initializer bias_initializer = "zeros";
  Regularizer kernel_regularizer{};
  Regularizer bias_regularizer{};
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class Conv2D : public Layer {
  EMBER_LAYER(Conv2D)
  Conv2D(int64_t filters, Size2 kernel_size, Conv2DOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;
  Shape compute_output_shape(const Shape& input_shape) override;
  void check_input_shape(const std::vector<Shape>& input_shapes) const override;
  nlohmann::json get_config() const override;

  int64_t filters() const { return filters_; }
  const Size2& kernel_size() const { return kernel_size_; }
  const Conv2DOptions& options() const { return options_; }
  const Variable& kernel() const { return kernel_; }
  const Variable& bias() const { return bias_; }

 private:
  int64_t filters_;
  Size2 kernel_size_;
  Conv2DOptions options_;
  Variable kernel_, bias_;
};

}  // namespace ember::layers
