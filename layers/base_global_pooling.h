#pragma once
// The shared part of GlobalAveragePooling1D/2D and GlobalMaxPooling1D/2D (Keras: base_global_pooling.py): a
// reduction over the spatial axes of a (batch, steps, channels) or NHWC input, keeping them as size 1 when
// keepdims.
#include <string>

#include "framework/model/layer.h"

namespace ember::layers {

struct GlobalPoolingOptions {
  std::string data_format = "channels_last";  // channels_first is rejected (channels last only)
  bool keepdims = false;                      // (batch, 1, [1,] channels) instead of (batch, channels)
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

// SpatialDims = 1: (batch, steps, channels) inputs; 2: (batch, height, width, channels).
template <int SpatialDims>
class GlobalPooling : public Layer {
  static_assert(SpatialDims == 1 || SpatialDims == 2);

 public:
  GlobalPooling(const std::string& base_name, GlobalPoolingOptions options);

  Tensor call(const Tensor& x, bool training) override;
  Shape compute_output_shape(const Shape& input_shape) override;
  // Keras's input spec is only ndim: a built layer takes any spatial sizes and channels.
  void check_input_shape(const std::vector<Shape>& input_shapes) const override;
  nlohmann::json get_config() const override;

  const GlobalPoolingOptions& options() const { return options_; }

 protected:
  // ops::reduce_mean or ops::reduce_max over the spatial axes (1, or {1, 2}).
  virtual Tensor reduce(const Tensor& x) const = 0;
  // Checks and standardises the arguments; each subclass constructor calls it (who() needs the subclass).
  void validate();
  static GlobalPoolingOptions parse_config(const nlohmann::json& c, const std::string& class_name);

  GlobalPoolingOptions options_;
};

extern template class GlobalPooling<1>;
extern template class GlobalPooling<2>;

using GlobalPooling1DOptions = GlobalPoolingOptions;
using GlobalPooling2DOptions = GlobalPoolingOptions;
using GlobalPooling1D = GlobalPooling<1>;
using GlobalPooling2D = GlobalPooling<2>;

}  // namespace ember::layers
