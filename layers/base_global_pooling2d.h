#pragma once
// The shared part of GlobalAveragePooling2D and GlobalMaxPooling2D (Keras: base_global_pooling.py): a
// reduction over height and width of an NHWC input, keeping them as size 1 when keepdims.
#include <string>

#include "framework/model/layer.h"

namespace ember::layers {

struct GlobalPooling2DOptions {
  std::string data_format = "channels_last";  // channels_first is rejected (NHWC only)
  bool keepdims = false;                      // (batch, 1, 1, channels) instead of (batch, channels)
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class GlobalPooling2D : public Layer {
 public:
  GlobalPooling2D(const std::string& base_name, GlobalPooling2DOptions options);

  Tensor call(const Tensor& x, bool training) override;
  Shape compute_output_shape(const Shape& input_shape) override;
  // Keras's input spec is only ndim=4: a built layer takes any height, width and channels.
  void check_input_shape(const std::vector<Shape>& input_shapes) const override;
  nlohmann::json get_config() const override;

  const GlobalPooling2DOptions& options() const { return options_; }

 protected:
  // ops::reduce_mean or ops::reduce_max over axes {1, 2}.
  virtual Tensor reduce(const Tensor& x) const = 0;
  // Checks and standardises the arguments; each subclass constructor calls it (who() needs the subclass).
  void validate();
  static GlobalPooling2DOptions parse_config(const nlohmann::json& c, const std::string& class_name);

  GlobalPooling2DOptions options_;
};

}  // namespace ember::layers
