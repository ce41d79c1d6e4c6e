#pragma once
// Images resized as tf.image.resize does, for data::image_dataset_from_directory (which decodes its files with
// io::decode_image's tensorflow convention, framework/io/image_file.h).
#include <array>
#include <cstdint>
#include <string>

#include "framework/core/tensor.h"

namespace ember::data {

// A uint8 or float32 image [height, width, channels] resized to `size` {height, width} as float32
// (tf.image.resize without antialiasing, half-pixel centres). `interpolation` is "bilinear" or "nearest".
// With crop_to_aspect_ratio the largest centred window of the target's aspect ratio is resized
// (keras.preprocessing.image.smart_resize).
Tensor resize_image(const Tensor& image, std::array<int64_t, 2> size, const std::string& interpolation = "bilinear",
                    bool crop_to_aspect_ratio = false);

}  // namespace ember::data
