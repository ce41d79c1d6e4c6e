#pragma once
// Resizing (Keras: keras.layers.Resizing): resizes channels_last images (one, or a batch) to height x width
// (keras.ops.image.resize: half-pixel centres, no antialias), optionally after cropping or padding to the
// target's aspect ratio; integer images are rounded back to their dtype.
#include <cstdint>
#include <string>
#include <vector>

#include "framework/model/layer.h"

namespace ember::layers {

struct ResizingOptions {
  std::string interpolation = "bilinear";  // "bilinear" or "nearest"; Keras's others are Unimplemented
  bool crop_to_aspect_ratio = false;       // resize the centred crop of the target's aspect ratio
  bool pad_to_aspect_ratio = false;        // resize the image centred in a box of the target's aspect ratio
  std::string fill_mode = "constant";      // how pad_to_aspect_ratio fills: only "constant", as Keras
  double fill_value = 0.0;                 // the padding's value
  bool antialias = false;  // Unimplemented when true
  std::string data_format{};  // "channels_last" (default); "channels_first" is Unimplemented
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class Resizing : public Layer {
  EMBER_LAYER(Resizing)
  Resizing(int64_t height, int64_t width, ResizingOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

  Tensor call(const Tensor& x, bool training) override;
  Shape compute_output_shape(const Shape& input_shape) override;
  // Keras gives Resizing no input spec: an image or a batch, of any size.
  void check_input_shape(const std::vector<Shape>& /*input_shapes*/) const override {}
  nlohmann::json get_config() const override;

  int64_t height() const { return height_; }
  int64_t width() const { return width_; }
  const ResizingOptions& options() const { return options_; }

 private:
  int64_t height_, width_;
  ResizingOptions options_;
};

}  // namespace ember::layers
