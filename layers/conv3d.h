#pragma once
// Conv3D (Keras: keras.layers.Conv3D): activation(conv3d(x, kernel) + bias) over (batch, depth, height, width,
// channels) inputs, kernel (kd, kh, kw, in_channels / groups, filters) as Keras lays it out. Composed of 2-D
// convolutions: each depth tap of the kernel convolves the matching (strided, dilated) depth slices, folded into
// the batch, with ops::conv2d, and the taps are summed; "same" pads the depth by TF's rule first.
#include <string>

#include "framework/model/layer.h"
#include "layers/conv_utils.h"

namespace ember::layers {

struct Conv3DOptions {
  Size3 strides = 1;
  std::string padding = "valid";              // "valid" or "same"
  std::string data_format = "channels_last";  // channels_first is rejected (NDHWC only)
  Size3 dilation_rate = 1;
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

class Conv3D : public Layer {
  EMBER_LAYER(Conv3D)
  Conv3D(int64_t filters, Size3 kernel_size, Conv3DOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;
  Shape compute_output_shape(const Shape& input_shape) override;
  void check_input_shape(const std::vector<Shape>& input_shapes) const override;
  nlohmann::json get_config() const override;

  int64_t filters() const { return filters_; }
  const Size3& kernel_size() const { return kernel_size_; }
  const Conv3DOptions& options() const { return options_; }
  const Variable& kernel() const { return kernel_; }
  const Variable& bias() const { return bias_; }

 private:
  int64_t filters_;
  Size3 kernel_size_;
  Conv3DOptions options_;
  Variable kernel_, bias_;
};

}  // namespace ember::layers
