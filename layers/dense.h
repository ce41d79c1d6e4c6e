#pragma once
// Dense (Keras: keras.layers.Dense): activation(x @ kernel + bias) over the last axis.
#include <string>

#include "framework/model/layer.h"

namespace ember::layers {

struct DenseOptions {
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

class Dense : public Layer {
  EMBER_LAYER(Dense)
  explicit Dense(int64_t units, DenseOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;
  Shape compute_output_shape(const Shape& input_shape) override;
  void check_input_shape(const std::vector<Shape>& input_shapes) const override;
  nlohmann::json get_config() const override;

  int64_t units() const { return units_; }
  const Variable& kernel() const { return kernel_; }
  const Variable& bias() const { return bias_; }

 private:
  int64_t units_;
  DenseOptions options_;
  Variable kernel_, bias_;
};

}  // namespace ember::layers
