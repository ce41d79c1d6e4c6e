#pragma once
// Reshape (Keras: keras.layers.Reshape): (batch, ...) -> (batch, *target_shape), row-major; one entry of
// target_shape may be -1 and is inferred. A view, no copy.
#include <string>

#include "framework/model/layer.h"

namespace ember::layers {

struct ReshapeOptions {
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class Reshape : public Layer {
  EMBER_LAYER(Reshape)
  explicit Reshape(Shape target_shape, ReshapeOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

  Tensor call(const Tensor& x, bool training) override;
  Shape compute_output_shape(const Shape& input_shape) override;
  // Keras has no input spec here: any per-sample shape with the right element count works (checked in call).
  void check_input_shape(const std::vector<Shape>& input_shapes) const override;
  nlohmann::json get_config() const override;

  const Shape& target_shape() const { return target_shape_; }

 private:
  Shape target_shape_;
};

}  // namespace ember::layers
