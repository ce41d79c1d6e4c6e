#pragma once
// RepeatVector (Keras: keras.layers.RepeatVector): repeats each sample's vector n times, (batch, features)
// -> (batch, n, features).
#include <string>
#include <vector>

#include "framework/model/layer.h"

namespace ember::layers {

class RepeatVector : public Layer {
  EMBER_LAYER(RepeatVector)
  // n >= 1.
  explicit RepeatVector(int64_t n, LayerOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

  Tensor call(const Tensor& x, bool training) override;
  Shape compute_output_shape(const Shape& input_shape) override;
  // Keras's input spec: rank 2 (any feature count).
  void check_input_shape(const std::vector<Shape>& input_shapes) const override;
  nlohmann::json get_config() const override;

  int64_t n() const { return n_; }

 private:
  int64_t n_;
};

}  // namespace ember::layers
