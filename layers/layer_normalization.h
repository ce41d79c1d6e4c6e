#pragma once
// LayerNormalization (Keras: keras.layers.LayerNormalization): normalises each sample over `axis` (one
// axis or several) with its own mean and variance, then scales by gamma and shifts by beta.
#include <string>
#include <vector>

#include "framework/model/layer.h"

namespace ember::layers {

struct LayerNormalizationOptions {
  std::vector<int64_t> axis = {-1};  // the normalised axes (negative counts from the end)
  double epsilon = 1e-3;
  bool center = true;        // beta
  bool scale = true;         // gamma
  bool rms_scaling = false;  // Keras's deprecated flag: x * rsqrt(var + eps) * gamma, no centring, no beta
  Initializer beta_initializer = "zeros";
  Initializer gamma_initializer = "ones";
  Regularizer beta_regularizer{};
  Regularizer gamma_regularizer{};
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

// Weights: gamma then beta, each shaped like the input's dimensions at the sorted axes. Half inputs
// are normalised in float32 (Keras: result_type(x, float32)) and the output cast back.
class LayerNormalization : public Layer {
  EMBER_LAYER(LayerNormalization)
  explicit LayerNormalization(LayerNormalizationOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;
  Shape compute_output_shape(const Shape& input_shape) override;
  // The built rank and the sizes of the normalised axes must match; other dimensions may change.
  void check_input_shape(const std::vector<Shape>& input_shapes) const override;
  nlohmann::json get_config() const override;

  const Variable& gamma() const { return gamma_; }
  const Variable& beta() const { return beta_; }

 private:
  std::vector<int64_t> positive_axes(int64_t rank) const;

  LayerNormalizationOptions options_;
  Variable gamma_, beta_;
};

}  // namespace ember::layers
