#pragma once
// Image files (PNG and JPEG, decoded with libpng and libjpeg) as uint8 pixel tensors, and PNG encoding.
#include <cstdint>
#include <span>
#include <string>

#include "framework/core/tensor.h"

namespace ember::io {

// Whose decoder decode_image reproduces. Both read the file the same way (tRNS transparency becomes alpha,
// palettes and low bit depths are expanded, 16-bit samples keep their high byte); they differ only in
//  - who converts to the channels asked for: pil decodes the file's own channels and converts as PIL's
//    Image.convert (gray L = (19595 R + 38470 G + 7471 B + 0x8000) >> 16, gray to RGB by copying, alpha dropped
//    or added opaque); tensorflow has libpng convert as tf.io.decode_png does (gray with libpng's 0.299/0.587
//    fixed-point weights) and takes a JPEG's gray as libjpeg's luminance, as tf.io.decode_jpeg does;
//  - the JPEG inverse DCT: pil libjpeg's default accurate integer one, tensorflow the fast integer one;
//  - JPEG into 4 channels: pil adds an opaque alpha, tensorflow refuses it (InvalidArgument), as TF does;
//  - channels 0 (the file's own: 1 gray, 3 colour, 4 with alpha or transparency): pil only;
//  - the error for data that is not a readable PNG or JPEG: pil DataLoss, tensorflow InvalidArgument (TF's
//    InvalidArgumentError).
enum class ImageConvention { pil, tensorflow };

// Decodes the PNG or JPEG file at `path` (recognised by content, not by name) into a uint8 CPU tensor of
// shape (height, width, channels), channels 1, 3 or 4, or 0 for the file's own (pil only), converted as
// `convention` says (pil is Keras's load_img, tensorflow is tf.io.decode_image as image_dataset_from_directory
// uses it). Gamma and colour profiles are not applied (neither PIL nor TF applies them). Missing file
// NotFound; GIF, BMP and CMYK JPEG Unimplemented; other channel counts InvalidArgument; not PNG/JPEG, truncated
// or corrupt DataLoss (pil) or InvalidArgument (tensorflow) naming the path.
Tensor decode_image(const std::string& path, int channels = 0, ImageConvention convention = ImageConvention::pil);

// The PNG file of 8-bit pixels (row-major height x width x channels; channels 1 gray, 2 gray and alpha, 3 RGB,
// 4 RGBA) as tf.io.encode_png writes it with its default compression (-1): libpng, zlib's default level, no
// interlacing and no chunks besides IHDR, IDAT and IEND. A size that does not match pixels, channels outside
// 1..4 or a side outside 1..2^31-1 is InvalidArgument.
std::string encode_png(std::span<const uint8_t> pixels, int64_t height, int64_t width, int64_t channels);

}  // namespace ember::io
