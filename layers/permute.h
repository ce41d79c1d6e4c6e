#pragma once
// Permute (Keras: keras.layers.Permute): reorders the per-sample axes; dims counts from 1 (the batch axis
// stays first), so Permute({2, 1}) swaps the two axes of a (batch, a, b) input.
#include <string>
#include <vector>

#include "framework/model/layer.h"

namespace ember::layers {

class Permute : public Layer {
  EMBER_LAYER(Permute)
  // dims: a permutation of 1..len(dims).
  explicit Permute(std::vector<int64_t> dims, LayerOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

  Tensor call(const Tensor& x, bool training) override;
  Shape compute_output_shape(const Shape& input_shape) override;
  // Keras's input spec: rank len(dims) + 1 (any sizes).
  void check_input_shape(const std::vector<Shape>& input_shapes) const override;
  nlohmann::json get_config() const override;

  const std::vector<int64_t>& dims() const { return dims_; }

 private:
  std::vector<int64_t> dims_;
};

}  // namespace ember::layers
