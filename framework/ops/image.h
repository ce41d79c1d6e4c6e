#pragma once
// Image ops (TF: tf.image, keras.ops.image) on channels_last images: one (H, W, C) or a batch (N, H, W, C).
#include <cstdint>
#include <string>

#include "framework/core/tensor.h"

namespace ember::ops::image {

struct AffineTransformOptions {
  std::string interpolation = "bilinear";    // "nearest" or "bilinear"
  std::string fill_mode = "constant";        // "constant", "nearest", "wrap" or "reflect"
  double fill_value = 0;                     // read outside the image with fill_mode "constant"
  std::string data_format = "channels_last";  // channels_first is Unimplemented
};
// keras.ops.image.affine_transform: each output point (x, y) reads the input at ((a0 x + a1 y + a2) / k,
// (b0 x + b1 y + b2) / k), k = c0 x + c1 y + 1, for transform = [a0, a1, a2, b0, b1, b2, c0, c1]: shape (8,) for
// all images or (N, 8), one per image. Floating images; same shape out. No gradient (TF registers none).
Tensor affine_transform(const Tensor& images, const Tensor& transform, AffineTransformOptions options = {});

struct ResizeOptions {
  std::string interpolation = "bilinear";    // "bilinear" or "nearest" (others are Unimplemented)
  bool crop_to_aspect_ratio = false;          // first crop the centred box of the target's aspect ratio
  std::string data_format = "channels_last";  // channels_first is Unimplemented
};
// keras.ops.image.resize (tf.image.resize, half-pixel centres, no antialias) to height x width. Bilinear is
// differentiable; bilinear on integer images gives float32 (as TF), floating images keep their dtype.
Tensor resize(const Tensor& images, int64_t height, int64_t width, ResizeOptions options = {});

// The centred box of the aspect ratio height:width inside an h x w image, as Keras's crop_to_aspect_ratio and
// smart_resize compute it: {top, left, box height, box width}.
struct CropBox {
  int64_t top, left, height, width;
};
CropBox aspect_ratio_crop_box(int64_t h, int64_t w, int64_t height, int64_t width);

}  // namespace ember::ops::image
