#pragma once
// The shared part of MaxPooling1D and AveragePooling1D (Keras: layers/pooling/base_pooling.py with
// pool_dimensions=1): window arguments, (batch, steps, channels) checks, output shapes and config. Subclasses
// supply the 2-D pooling op, run over a unit height as TF's 1-D pools do.
#include <string>
#include <utility>

#include "framework/model/layer.h"
#include "layers/conv_utils.h"

namespace ember::layers {

struct Pooling1DOptions {
  int64_t strides = 0;                        // 0 (Keras's None): the pool size
  std::string padding = "valid";              // "valid" or "same" (SAME averages count only real steps, as TF)
  std::string data_format = "channels_last";  // channels_first is rejected (steps, channels only)
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class Pooling1D : public Layer {
 public:
  Pooling1D(const std::string& base_name, int64_t pool_size, Pooling1DOptions options);

  Tensor call(const Tensor& x, bool training) override;
  Shape compute_output_shape(const Shape& input_shape) override;
  // Keras's input spec is only ndim=3: a built pooling layer takes any steps and channels.
  void check_input_shape(const std::vector<Shape>& input_shapes) const override;
  nlohmann::json get_config() const override;

  int64_t pool_size() const { return pool_size_; }
  const Pooling1DOptions& options() const { return options_; }

 protected:
  // ops::max_pool2d or ops::avg_pool2d over (batch, 1, steps, channels) with a (1, pool_size) window.
  virtual Tensor pool(const Tensor& x4) const = 0;
  // Checks and standardises the arguments; each subclass constructor calls it (who() needs the subclass).
  void validate();
  // pool_size and options from a Keras config.
  static std::pair<int64_t, Pooling1DOptions> parse_config(const nlohmann::json& c, const std::string& class_name);

  int64_t pool_size_;
  Pooling1DOptions options_;
};

}  // namespace ember::layers
