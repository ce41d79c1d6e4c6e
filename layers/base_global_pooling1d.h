#pragma once
// The shared part of GlobalAveragePooling1D and GlobalMaxPooling1D (Keras: base_global_pooling.py with
// pool_dimensions=1): a reduction over the steps of a (batch, steps, channels) input, keeping them as size 1
// when keepdims.
#include <string>

#include "framework/model/layer.h"

namespace ember::layers {

struct GlobalPooling1DOptions {
  std::string data_format = "channels_last";  // channels_first is rejected (steps, channels only)
  bool keepdims = false;                      // (batch, 1, channels) instead of (batch, channels)
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class GlobalPooling1D : public Layer {
 public:
  GlobalPooling1D(const std::string& base_name, GlobalPooling1DOptions options);

  Tensor call(const Tensor& x, bool training) override;
  Shape compute_output_shape(const Shape& input_shape) override;
  // Keras's input spec is only ndim=3: a built layer takes any steps and channels.
  void check_input_shape(const std::vector<Shape>& input_shapes) const override;
  nlohmann::json get_config() const override;

  const GlobalPooling1DOptions& options() const { return options_; }

 protected:
  // ops::reduce_mean or ops::reduce_max over axis 1.
  virtual Tensor reduce(const Tensor& x) const = 0;
  // Checks and standardises the arguments; each subclass constructor calls it (who() needs the subclass).
  void validate();
  static GlobalPooling1DOptions parse_config(const nlohmann::json& c, const std::string& class_name);

  GlobalPooling1DOptions options_;
};

}  // namespace ember::layers
