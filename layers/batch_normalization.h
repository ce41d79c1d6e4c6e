#pragma once
// BatchNormalization (Keras: keras.layers.BatchNormalization): normalises each feature along `axis` with
// the batch's statistics while training (updating moving averages of them) and with the moving averages
// at inference.
#include <string>

#include "framework/model/layer.h"

namespace ember::layers {

struct BatchNormalizationOptions {
  int64_t axis = -1;  // the feature axis (negative counts from the end)
  double momentum = 0.99;
  double epsilon = 1e-3;
  bool center = true;  // beta
  bool scale = true;   // gamma
  Initializer beta_initializer = "zeros";
  Initializer gamma_initializer = "ones";
  Initializer moving_mean_initializer = "zeros";
  Initializer moving_variance_initializer = "ones";
  Regularizer beta_regularizer{};
  Regularizer gamma_regularizer{};
  bool synchronized = false;  // cross-replica statistics; one device here, so kept for the config only
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

// Weights in Keras order: gamma, beta (trainable), moving_mean, moving_variance (non-trainable).
// training = true on a trainable layer: batch mean and biased variance over every axis but `axis`;
// moving = moving * momentum + batch * (1 - momentum), assigned outside any tape. Otherwise, and always
// when the layer is frozen (trainable = false, as Keras 3), the moving statistics. Half inputs are
// normalised in float32 (Keras: result_type(x, float32)) and the output cast back. A training step on a GPU
// runs it as one op, ops::fused_batch_norm (cuDNN's NHWC batch norm, which reads half inputs as they are), where
// ops::fused_batch_norm_applies says so; the graph compiler may fuse a following relu (and a residual add) into it.
class BatchNormalization : public Layer {
  EMBER_LAYER(BatchNormalization)
  explicit BatchNormalization(BatchNormalizationOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;
  Shape compute_output_shape(const Shape& input_shape) override;
  // Keras's input spec: the built rank and the size of the feature axis; other dimensions may change.
  void check_input_shape(const std::vector<Shape>& input_shapes) const override;
  nlohmann::json get_config() const override;

  const Variable& gamma() const { return gamma_; }
  const Variable& beta() const { return beta_; }
  const Variable& moving_mean() const { return moving_mean_; }
  const Variable& moving_variance() const { return moving_variance_; }

 private:
  int64_t positive_axis(int64_t rank) const;
  // moving = moving * momentum + batch * (1 - momentum) for the batch's mean and biased variance, shape (C,).
  void update_moving_statistics(const Tensor& mean, const Tensor& variance);

  BatchNormalizationOptions options_;
  Variable gamma_, beta_, moving_mean_, moving_variance_;
};

}  // namespace ember::layers
