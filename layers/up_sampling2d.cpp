#include "layers/up_sampling2d.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "framework/core/config_reader.h"
#include "framework/core/strings.h"
#include "framework/ops/array.h"
#include "framework/ops/elementwise.h"

namespace ember::layers {

using ::ember::detail::config_string;

using conv_utils::who;

namespace {

// out = x repeated `times` times along axis (tf.repeat, which Keras uses for "nearest"): a broadcast over a new
// axis after it, then a reshape, so the gradient is the broadcast's sum.
Tensor repeat(const Tensor& x, int64_t axis, int64_t times) {
  if (times == 1) return x;
  Shape s = x.shape();
  Tensor e = ops::expand_dims(x, axis + 1);
  std::vector<int64_t> wide(e.shape().begin(), e.shape().end());
  wide[axis + 1] = times;
  s[axis] *= times;
  return ops::reshape(ops::broadcast_to(e, Shape(wide)), s);
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

}  // namespace

UpSampling2D::UpSampling2D(Size2 size, UpSampling2DOptions options)
    : Layer("up_sampling2d", {options.name, options.dtype, options.trainable}),
      size_(size),
      options_(std::move(options)) {
  const std::string w = who(*this);
  conv_utils::check_size2(size_, 1, w, "size");
  options_.data_format = conv_utils::standardize_data_format(options_.data_format, w);
  options_.interpolation = ascii_lower(options_.interpolation);
  EMBER_CHECK(options_.interpolation == "nearest" || options_.interpolation == "bilinear", InvalidArgument)
      << w << ": interpolation must be \"nearest\" or \"bilinear\" (Ember implements no other resize method), got \""
      << options_.interpolation << "\"";
}

Tensor UpSampling2D::call(const Tensor& x, bool training) {
  const Shape out = compute_output_shape(x.shape());
  if (options_.interpolation == "nearest") return repeat(repeat(x, 1, size_.h), 2, size_.w);
  // TF resizes half-precision images in float32 (its output is float32); Ember keeps the layer's dtype.
  const bool half = x.dtype() == DType::Float16 || x.dtype() == DType::BFloat16;
  Tensor y = half ? ops::cast(x, DType::Float32) : x;
  y = lerp_axis(lerp_axis(y, 2, out[2]), 1, out[1]);
  return half ? ops::cast(y, x.dtype()) : y;
}

Shape UpSampling2D::compute_output_shape(const Shape& s) {
  conv_utils::check_rank4(s, who(*this));
  return Shape{s[0], s[1] < 0 ? -1 : s[1] * size_.h, s[2] < 0 ? -1 : s[2] * size_.w, s[3]};
}

void UpSampling2D::check_input_shape(const std::vector<Shape>& shapes) const {
  EMBER_CHECK(shapes.size() == 1 && shapes[0].rank() == 4, InvalidArgument)
      << who(*this) << ": expected one rank-4 input (batch, height, width, channels), got "
      << (shapes.size() == 1 ? shapes[0].to_string() : std::to_string(shapes.size()) + " inputs");
}

nlohmann::json UpSampling2D::get_config() const {
  nlohmann::json c = base_config();
  c["size"] = size_.to_json();
  c["data_format"] = options_.data_format;
  c["interpolation"] = options_.interpolation;
  return c;
}

LayerPtr UpSampling2D::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const std::string w = "UpSampling2D '" + base.name + "'";
  const Size2 size = c.contains("size") ? conv_utils::size2_from_json(c["size"], w, "size") : Size2(2);
  UpSampling2DOptions o{.data_format = conv_utils::data_format_from_config(c),
                        .interpolation = config_string(c, "interpolation", "nearest", w),
                        .name = base.name,
                        .dtype = base.dtype,
                        .trainable = base.trainable};
  return std::make_shared<UpSampling2D>(size, o);
}

EMBER_REGISTER_LAYER(UpSampling2D);

}  // namespace ember::layers
