#pragma once
// Masking (Keras: keras.layers.Masking): marks the time steps whose features all equal mask_value as
// masked, zeroes them, and gives the mask (batch, timesteps) to the layers after it (an LSTM skips them).
#include <string>
#include <vector>

#include "framework/model/layer.h"

namespace ember::layers {

struct MaskingOptions {
  double mask_value = 0.0;
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class Masking : public Layer {
  EMBER_LAYER(Masking)
  explicit Masking(MaskingOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

  Tensor call(const Tensor& x, bool training) override;
  // any(x != mask_value) over the last axis.
  std::vector<Tensor> compute_mask(const std::vector<Tensor>& xs, const std::vector<Tensor>& masks) override;
  Shape compute_output_shape(const Shape& input_shape) override { return input_shape; }
  // No input spec in Keras: any shape is accepted after the first call.
  void check_input_shape(const std::vector<Shape>& /*input_shapes*/) const override {}
  nlohmann::json get_config() const override;

  double mask_value() const { return options_.mask_value; }

 private:
  Tensor step_mask(const Tensor& x, bool keepdims) const;
  MaskingOptions options_;
};

}  // namespace ember::layers
