#pragma once
// ActivityRegularization (Keras: keras.layers.ActivityRegularization): passes its input through and adds
// (l1 * sum(|y|) + l2 * sum(y^2)) / batch_size to the layer's losses (Keras 3's activity regularizer), which
// fit adds to the loss it minimises.
#include <string>
#include <vector>

#include "framework/model/layer.h"

namespace ember::layers {

struct ActivityRegularizationOptions {
  double l1 = 0.0;  // finite, >= 0
  double l2 = 0.0;
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class ActivityRegularization : public Layer {
  EMBER_LAYER(ActivityRegularization)
  explicit ActivityRegularization(ActivityRegularizationOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

  // Every call adds its penalty (float32 scalar) with add_loss, in training and inference alike, as Keras.
  Tensor call(const Tensor& x, bool training) override;
  Shape compute_output_shape(const Shape& input_shape) override { return input_shape; }
  // No input spec in Keras: any shape is accepted after the first call.
  void check_input_shape(const std::vector<Shape>& /*input_shapes*/) const override {}
  nlohmann::json get_config() const override;

 private:
  ActivityRegularizationOptions options_;
  Regularizer regularizer_;
};

}  // namespace ember::layers
