#pragma once
// CenterCrop (Keras: keras.layers.CenterCrop): the centred height x width crop of channels_last images (one, or a
// batch), in the compute dtype; an image smaller than the target is resized as Keras's smart_resize does (the
// centred crop of the target's aspect ratio, resized bilinearly).
#include <cstdint>
#include <string>
#include <vector>

#include "framework/model/layer.h"

namespace ember::layers {

struct CenterCropOptions {
  std::string data_format{};  // "channels_last" (default); "channels_first" is Unimplemented
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class CenterCrop : public Layer {
  EMBER_LAYER(CenterCrop)
  CenterCrop(int64_t height, int64_t width, CenterCropOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

  Tensor call(const Tensor& x, bool training) override;
  Shape compute_output_shape(const Shape& input_shape) override;
  DType compute_output_dtype(const std::vector<DType>& /*input_dtypes*/) const override { return compute_dtype(); }
  // Keras gives CenterCrop no input spec: an image or a batch, of any size.
  void check_input_shape(const std::vector<Shape>& /*input_shapes*/) const override {}
  nlohmann::json get_config() const override;

  int64_t height() const { return height_; }
  int64_t width() const { return width_; }

 private:
  int64_t height_, width_;
  CenterCropOptions options_;
};

}  // namespace ember::layers
