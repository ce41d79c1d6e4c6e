#include "layers/up_sampling2d.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "framework/core/config_reader.h"
#include "framework/core/strings.h"
#include "framework/ops/array.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/image.h"

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
  // tf.image.resize's bilinear weights (TF's output for half-precision images is float32; Ember keeps the dtype).
  return ops::image::resize(x, out[1], out[2]);
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
