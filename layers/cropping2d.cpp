#include "layers/cropping2d.h"

#include "framework/ops/array.h"
#include "layers/conv_utils.h"

namespace ember::layers {

using conv_utils::who;

Cropping2D::Cropping2D(Padding2D cropping, Cropping2DOptions options)
    : Layer("cropping2d", {options.name, options.dtype, options.trainable}),
      cropping_(cropping),
      options_(std::move(options)) {
  const std::string w = who(*this);
  EMBER_CHECK(cropping_.top >= 0 && cropping_.bottom >= 0 && cropping_.left >= 0 && cropping_.right >= 0,
              InvalidArgument)
      << w << ": cropping must be non-negative, got " << cropping_.to_json().dump();
  options_.data_format = conv_utils::standardize_data_format(options_.data_format, w);
}

Tensor Cropping2D::call(const Tensor& x, bool training) {
  const Shape out = compute_output_shape(x.shape());
  return ops::slice(x, {0, cropping_.top, cropping_.left, 0}, {-1, out[1], out[2], -1});
}

Shape Cropping2D::compute_output_shape(const Shape& s) {
  conv_utils::check_rank4(s, who(*this));
  const int64_t ch = cropping_.top + cropping_.bottom, cw = cropping_.left + cropping_.right;
  EMBER_CHECK((s[1] < 0 || ch < s[1]) && (s[2] < 0 || cw < s[2]), InvalidArgument)
      << who(*this) << ": cropping " << cropping_.to_json().dump() << " must leave at least one row and column of "
      << "the input, got shape " << s;
  return Shape{s[0], s[1] < 0 ? -1 : s[1] - ch, s[2] < 0 ? -1 : s[2] - cw, s[3]};
}

void Cropping2D::check_input_shape(const std::vector<Shape>& shapes) const {
  EMBER_CHECK(shapes.size() == 1 && shapes[0].rank() == 4, InvalidArgument)
      << who(*this) << ": expected one rank-4 input (batch, height, width, channels), got "
      << (shapes.size() == 1 ? shapes[0].to_string() : std::to_string(shapes.size()) + " inputs");
}

nlohmann::json Cropping2D::get_config() const {
  nlohmann::json c = base_config();
  c["cropping"] = cropping_.to_json();
  c["data_format"] = options_.data_format;
  return c;
}

LayerPtr Cropping2D::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const Padding2D cropping =
      Padding2D::from_json(c.value("cropping", nlohmann::json(0)), "Cropping2D '" + base.name + "'", "cropping");
  return std::make_shared<Cropping2D>(cropping, Cropping2DOptions{.data_format = conv_utils::data_format_from_config(c),
                                                                  .name = base.name,
                                                                  .dtype = base.dtype,
                                                                  .trainable = base.trainable});
}

EMBER_REGISTER_LAYER(Cropping2D);

}  // namespace ember::layers
