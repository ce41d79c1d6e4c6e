#pragma once
// The shared part of MaxPooling2D and AveragePooling2D (Keras: layers/pooling/base_pooling.py): window
// arguments, NHWC checks, output shapes and config. Subclasses supply the pooling op.
#include <string>

#include "framework/model/layer.h"
#include "layers/conv_utils.h"

namespace ember::layers {

struct Pooling2DOptions {
  Size2 strides = 0;                          // 0 (Keras's None): the pool size
  std::string padding = "valid";              // "valid" or "same" (SAME averages count only real pixels, as TF)
  std::string data_format = "channels_last";  // channels_first is rejected (NHWC only)
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class Pooling2D : public Layer {
 public:
  Pooling2D(const std::string& base_name, Size2 pool_size, Pooling2DOptions options);

  Tensor call(const Tensor& x, bool training) override;
  Shape compute_output_shape(const Shape& input_shape) override;
  // Keras's input spec is only ndim=4: a built pooling layer takes any height, width and channels.
  void check_input_shape(const std::vector<Shape>& input_shapes) const override;
  nlohmann::json get_config() const override;

  const Size2& pool_size() const { return pool_size_; }
  const Pooling2DOptions& options() const { return options_; }

 protected:
  // ops::max_pool2d or ops::avg_pool2d with this layer's window.
  virtual Tensor pool(const Tensor& x) const = 0;
  // Checks and standardises the arguments; each subclass constructor calls it (who() needs the subclass).
  void validate();
  // pool_size and options from a Keras config (either dialect).
  static std::pair<Size2, Pooling2DOptions> parse_config(const nlohmann::json& c, const std::string& class_name);

  Size2 pool_size_;
  Pooling2DOptions options_;
};

}  // namespace ember::layers
