#pragma once
// Image files (PNG and JPEG, decoded with libpng and libjpeg) as uint8 pixel tensors.
#include <string>

#include "framework/core/tensor.h"

namespace ember::io {

// Decodes the PNG or JPEG file at `path` (recognised by content, not by name) into a uint8 CPU tensor of
// shape (height, width, channels). channels 0 keeps the file's own (1 grayscale, 3 RGB, 4 RGBA); 1, 3 or 4
// converts as Keras's load_img does with PIL (grayscale L = 0.299 R + 0.587 G + 0.114 B, RGB drops alpha,
// RGBA adds an opaque one). Missing file NotFound; not PNG/JPEG, truncated or corrupt DataLoss naming the path;
// CMYK JPEG Unimplemented; other channel counts InvalidArgument.
Tensor decode_image(const std::string& path, int channels = 0);

}  // namespace ember::io
