#include "framework/ops/image.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "framework/core/error.h"
#include "framework/core/strings.h"
#include "framework/ops/array.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/image_math.h"

namespace ember::ops::image {

namespace {

void check_channels_last(const std::string& data_format, const char* op) {
  const std::string f = ascii_lower(data_format);
  if (f == "channels_first")
    throw make_error<Unimplemented>(op, ": data_format \"channels_first\" is not implemented (Ember images are "
                                        "channels_last, NHWC)");
  EMBER_CHECK(f == "channels_last", InvalidArgument)
      << op << ": data_format must be \"channels_last\" or \"channels_first\", got \"" << data_format << "\"";
}

void check_images(const Tensor& images, const char* op) {
  EMBER_CHECK(images.rank() == 3 || images.rank() == 4, InvalidArgument)
      << op << ": expected images of rank 3 (height, width, channels) or 4 (batch, height, width, channels), got shape "
      << images.shape();
}

// One axis of TF's ResizeBilinear with half_pixel_centers (what tf.image.resize runs): output i reads input
// position (i + 0.5) * in / out - 0.5, in float32 as TF computes it, between rows lower and upper (clamped) with
// weight lerp, and is lower + (upper - lower) * lerp. TF interpolates along the width, then the height, with
// that formula; doing the axes in the same order gives its operations in its order.
Tensor lerp_axis(const Tensor& x, int64_t axis, int64_t out) {
  const int64_t in = x.shape()[axis];
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  std::vector<int32_t> lower(out), upper(out);
  std::vector<float> lerp(out);
  for (int64_t i = 0; i < out; ++i) {
    // The product is rounded to float before the subtraction, as TF's kernel computes it: the volatile store
    // keeps the compiler from fusing the two into one FMA under -march=native, which moves some weights (and so
    // outputs) by an ulp.
    volatile float scaled = (static_cast<float>(i) + 0.5f) * scale;
    const float pos = scaled - 0.5f;
    const float floor = std::floor(pos);
    lower[i] = static_cast<int32_t>(std::max<int64_t>(static_cast<int64_t>(floor), 0));
    upper[i] = static_cast<int32_t>(std::min<int64_t>(static_cast<int64_t>(std::ceil(pos)), in - 1));
    lerp[i] = pos - floor;
  }
  Tensor lo = ops::gather(x, Tensor::from_vector<int32_t>(lower, Shape{out}, x.device()), {.axis = axis});
  Tensor hi = ops::gather(x, Tensor::from_vector<int32_t>(upper, Shape{out}, x.device()), {.axis = axis});
  std::vector<int64_t> ws(x.rank(), 1);
  ws[axis] = out;
  Tensor w = ops::cast(Tensor::from_vector<float>(lerp, Shape(ws), x.device()), x.dtype());
  return lo + (hi - lo) * w;
}

// One axis of TF's ResizeNearestNeighbor with half_pixel_centers: output i reads input
// min(floor((i + 0.5) * in / out), in - 1).
Tensor nearest_axis(const Tensor& x, int64_t axis, int64_t out) {
  const int64_t in = x.shape()[axis];
  if (in == out) return x;
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  std::vector<int32_t> src(out);
  for (int64_t i = 0; i < out; ++i) {
    volatile float scaled = (static_cast<float>(i) + 0.5f) * scale;
    src[i] = static_cast<int32_t>(std::min<int64_t>(static_cast<int64_t>(std::floor(scaled)), in - 1));
  }
  return ops::gather(x, Tensor::from_vector<int32_t>(src, Shape{out}, x.device()), {.axis = axis});
}

}  // namespace

Tensor affine_transform(const Tensor& images, const Tensor& transform, AffineTransformOptions options) {
  constexpr const char* op = "affine_transform";
  check_channels_last(options.data_format, op);
  check_images(images, op);
  EMBER_CHECK(is_floating(images.dtype()), InvalidArgument)
      << op << ": expected floating images (cast integer images first), got dtype " << images.dtype();
  EMBER_CHECK((transform.rank() == 1 || transform.rank() == 2) && transform.shape()[transform.rank() - 1] == 8,
              InvalidArgument)
      << op << ": expected a transform of shape (8,) or (batch, 8), got shape " << transform.shape();
  EMBER_CHECK(is_floating(transform.dtype()), InvalidArgument)
      << op << ": expected a floating transform, got dtype " << transform.dtype();
  const std::string interpolation = ascii_lower(options.interpolation), fill_mode = ascii_lower(options.fill_mode);
  AffineTransformAttrs attrs;
  attrs.fill_value = options.fill_value;
  if (interpolation == "nearest") attrs.interpolation = image_math::kInterpolationNearest;
  else if (interpolation == "bilinear") attrs.interpolation = image_math::kInterpolationBilinear;
  else
    throw make_error<InvalidArgument>(op, ": interpolation must be \"nearest\" or \"bilinear\", got \"",
                                      options.interpolation, "\"");
  if (fill_mode == "reflect") attrs.fill_mode = image_math::kFillReflect;
  else if (fill_mode == "wrap") attrs.fill_mode = image_math::kFillWrap;
  else if (fill_mode == "constant") attrs.fill_mode = image_math::kFillConstant;
  else if (fill_mode == "nearest") attrs.fill_mode = image_math::kFillNearest;
  else
    throw make_error<InvalidArgument>(op, ": fill_mode must be \"constant\", \"nearest\", \"wrap\" or \"reflect\", got \"",
                                      options.fill_mode, "\"");
  const bool single = images.rank() == 3;
  const Tensor x = single ? ops::expand_dims(images, 0) : images;
  Tensor t = transform.rank() == 1 ? ops::expand_dims(transform, 0) : transform;
  EMBER_CHECK(t.shape()[0] == 1 || t.shape()[0] == x.shape()[0], InvalidArgument)
      << op << ": expected one transform or one per image (" << x.shape()[0] << "), got transform shape "
      << transform.shape();
  if (t.dtype() != DType::Float32) t = ops::cast(t, DType::Float32);
  const Tensor inputs[] = {x, t};
  Tensor y = run_op(OpId::affine_transform, inputs, OutputSpec{x.shape(), x.dtype()}, attrs);
  return single ? ops::squeeze(y, {0}) : y;
}

CropBox aspect_ratio_crop_box(int64_t h, int64_t w, int64_t height, int64_t width) {
  // Keras computes these in float32 and truncates.
  int64_t ch = static_cast<int64_t>(static_cast<float>(w * height) / static_cast<float>(width));
  ch = std::max<int64_t>(std::min(h, ch), 1);
  int64_t cw = static_cast<int64_t>(static_cast<float>(h * width) / static_cast<float>(height));
  cw = std::max<int64_t>(std::min(w, cw), 1);
  return {static_cast<int64_t>(static_cast<float>(h - ch) / 2), static_cast<int64_t>(static_cast<float>(w - cw) / 2),
          ch, cw};
}

Tensor resize(const Tensor& images, int64_t height, int64_t width, ResizeOptions options) {
  constexpr const char* op = "resize";
  check_channels_last(options.data_format, op);
  check_images(images, op);
  EMBER_CHECK(height > 0 && width > 0, InvalidArgument)
      << op << ": expected a positive size, got (" << height << ", " << width << ")";
  const std::string interpolation = ascii_lower(options.interpolation);
  if (interpolation != "bilinear" && interpolation != "nearest") {
    const bool keras = interpolation == "bicubic" || interpolation == "lanczos3" || interpolation == "lanczos5" ||
                       interpolation == "area";
    if (keras)
      throw make_error<Unimplemented>(op, ": interpolation \"", options.interpolation,
                                      "\" is not implemented (Ember implements \"bilinear\" and \"nearest\")");
    throw make_error<InvalidArgument>(op, ": interpolation must be one of \"bilinear\", \"nearest\", \"bicubic\", "
                                          "\"lanczos3\", \"lanczos5\", \"area\", got \"", options.interpolation, "\"");
  }
  const int64_t ha = images.rank() - 3, wa = images.rank() - 2;
  Tensor x = images;
  if (options.crop_to_aspect_ratio) {
    const CropBox b = aspect_ratio_crop_box(x.shape()[ha], x.shape()[wa], height, width);
    std::vector<int64_t> begin(x.rank(), 0), size(x.shape().begin(), x.shape().end());
    begin[ha] = b.top, begin[wa] = b.left, size[ha] = b.height, size[wa] = b.width;
    x = ops::slice(x, begin, size);
  }
  if (interpolation == "nearest") return nearest_axis(nearest_axis(x, wa, width), ha, height);
  // TF resizes in float32: integer images come out float32; the half types go back to their dtype.
  const DType dt = x.dtype();
  const bool to_float = dt != DType::Float32 && dt != DType::Float64;
  if (to_float) x = ops::cast(x, DType::Float32);
  x = lerp_axis(lerp_axis(x, wa, width), ha, height);
  return to_float && is_floating(dt) ? ops::cast(x, dt) : x;
}

}  // namespace ember::ops::image
