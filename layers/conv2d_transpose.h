#pragma once
// Conv2DTranspose (Keras: keras.layers.Conv2DTranspose): the transpose (gradient) of a 2-D convolution over NHWC
// inputs, kernel (kh, kw, filters, in_channels) as Keras lays it out; runs as ops::conv2d_backprop_input into
// the output shape Keras computes (TF's tf.nn.conv_transpose).
#include <optional>
#include <string>

#include "framework/model/layer.h"
#include "layers/conv_utils.h"

namespace ember::layers {

struct Conv2DTransposeOptions {
  Size2 strides = 1;
  std::string padding = "valid";  // "valid" or "same"
  // Extra rows/columns on the bottom/right of the output, each below its stride; unset (Keras's None): the
  // output is in * stride ("same") or (in - 1) * stride + max(dilated kernel, stride) ("valid").
  std::optional<Size2> output_padding{};
  std::string data_format = "channels_last";  // channels_first is rejected (NHWC only)
  Size2 dilation_rate = 1;
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

class Conv2DTranspose : public Layer {
  EMBER_LAYER(Conv2DTranspose)
  Conv2DTranspose(int64_t filters, Size2 kernel_size, Conv2DTransposeOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;
  Shape compute_output_shape(const Shape& input_shape) override;
  void check_input_shape(const std::vector<Shape>& input_shapes) const override;
  nlohmann::json get_config() const override;

  int64_t filters() const { return filters_; }
  const Size2& kernel_size() const { return kernel_size_; }
  const Conv2DTransposeOptions& options() const { return options_; }
  const Variable& kernel() const { return kernel_; }
  const Variable& bias() const { return bias_; }

 private:
  int64_t filters_;
  Size2 kernel_size_;
  Conv2DTransposeOptions options_;
  Variable kernel_, bias_;
};

}  // namespace ember::layers
