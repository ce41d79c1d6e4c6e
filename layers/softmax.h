#pragma once
// Softmax (Keras: keras.layers.Softmax): exp(x) / sum(exp(x)) along one axis, or jointly over several.
#include <string>
#include <vector>

#include "framework/model/layer.h"

namespace ember::layers {

struct SoftmaxOptions {
  // The normalised axis, or several axes normalised jointly (Keras's tuple axis). Negative counts from
  // the end.
  std::vector<int64_t> axis = {-1};
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

// Computes in the layer's compute dtype, as Keras 3 does (its Softmax layer does not upcast under
// mixed_float16); the softmax kernel accumulates half types in float32 and rounds once, like TF's.
class Softmax : public Layer {
  EMBER_LAYER(Softmax)
  explicit Softmax(SoftmaxOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

  Tensor call(const Tensor& x, bool training) override;
  Shape compute_output_shape(const Shape& input_shape) override;
  // No input spec in Keras: any shape is accepted after the first call (the axes must exist).
  void check_input_shape(const std::vector<Shape>& input_shapes) const override;
  nlohmann::json get_config() const override;

 private:
  void check_axes(const Shape& shape) const;
  SoftmaxOptions options_;
};

}  // namespace ember::layers
