#pragma once
// Conv1D (Keras: keras.layers.Conv1D): activation(conv1d(x, kernel) + bias) over (batch, steps, channels)
// inputs, kernel (kernel_size, in_channels / groups, filters) as Keras lays it out. Runs as ops::conv2d over a
// unit height, as TF's conv1d does; "causal" padding pads (kernel_size - 1) * dilation_rate steps on the left.
#include <string>

#include "framework/model/layer.h"
#include "layers/conv_utils.h"

namespace ember::layers {

struct Conv1DOptions {
  int64_t strides = 1;
  std::string padding = "valid";              // "valid", "same" or "causal"
  std::string data_format = "channels_last";  // channels_first is rejected (steps, channels only)
  int64_t dilation_rate = 1;
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

class Conv1D : public Layer {
  EMBER_LAYER(Conv1D)
  Conv1D(int64_t filters, int64_t kernel_size, Conv1DOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;
  Shape compute_output_shape(const Shape& input_shape) override;
  void check_input_shape(const std::vector<Shape>& input_shapes) const override;
  nlohmann::json get_config() const override;

  int64_t filters() const { return filters_; }
  int64_t kernel_size() const { return kernel_size_; }
  const Conv1DOptions& options() const { return options_; }
  const Variable& kernel() const { return kernel_; }
  const Variable& bias() const { return bias_; }

 private:
  int64_t filters_;
  int64_t kernel_size_;
  Conv1DOptions options_;
  Variable kernel_, bias_;
};

}  // namespace ember::layers
