#pragma once
// Image files into tensors, as tf.io.decode_image and tf.image.resize give them: the pieces of
// data::image_dataset_from_directory.
#include <array>
#include <cstdint>
#include <string>

#include "framework/core/tensor.h"

namespace ember::data {

// Reads a PNG or JPEG file (told apart by their first bytes, not the extension) into a uint8 CPU tensor
// [height, width, channels] with `channels` 1, 3 or 4, converting as TF's decoders do (gray to RGB by
// copying, RGB to gray with weights 0.299/0.587/0.114, alpha added as 255 or dropped; JPEG has no 4-channel
// form). NotFound when the file cannot be read; InvalidArgument naming the file when it is not a PNG or JPEG
// or its data is corrupt; Unimplemented for GIF and BMP.
Tensor decode_image_file(const std::string& path, int channels);

// A uint8 or float32 image [height, width, channels] resized to `size` {height, width} as float32
// (tf.image.resize without antialiasing, half-pixel centres). `interpolation` is "bilinear" or "nearest".
// With crop_to_aspect_ratio the largest centred window of the target's aspect ratio is resized
// (keras.preprocessing.image.smart_resize).
Tensor resize_image(const Tensor& image, std::array<int64_t, 2> size, const std::string& interpolation = "bilinear",
                    bool crop_to_aspect_ratio = false);

}  // namespace ember::data
