#pragma once
// PReLU (Keras: keras.layers.PReLU): x where x >= 0, else alpha * x, with a learned alpha per input element
// (shared along `shared_axes`).
#include <string>
#include <vector>

#include "framework/model/layer.h"

namespace ember::layers {

struct PReLUOptions {
  Initializer alpha_initializer = "zeros";
  Regularizer alpha_regularizer{};
  // Axes (counting the batch axis as 0, so >= 1) along which one alpha is shared: {1, 2} gives one alpha per
  // channel of an NHWC image.
  std::vector<int64_t> shared_axes{};
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

// Weight: alpha, shaped like one sample with the shared axes set to 1. Keras's alpha_constraint is not
// implemented: a config with one is rejected.
class PReLU : public Layer {
  EMBER_LAYER(PReLU)
  explicit PReLU(PReLUOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;
  Shape compute_output_shape(const Shape& input_shape) override { return input_shape; }
  // Keras's input spec: the built rank, and the built size on every axis that is not shared.
  void check_input_shape(const std::vector<Shape>& input_shapes) const override;
  nlohmann::json get_config() const override;

  const Variable& alpha() const { return alpha_; }

 private:
  PReLUOptions options_;
  Variable alpha_;
};

}  // namespace ember::layers
