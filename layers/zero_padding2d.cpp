#include "layers/zero_padding2d.h"

#include "framework/ops/array.h"
#include "layers/conv_utils.h"

namespace ember::layers {

using conv_utils::who;

Padding2D Padding2D::from_json(const nlohmann::json& p, const std::string& who, const char* key) {
  auto is_int = [](const nlohmann::json& j) { return j.is_number_integer(); };
  auto is_pair = [&](const nlohmann::json& j) { return j.is_array() && j.size() == 2 && is_int(j[0]) && is_int(j[1]); };
  if (is_int(p)) return Padding2D(p.get<int64_t>());
  if (is_pair(p)) return Padding2D(p[0].get<int64_t>(), p[1].get<int64_t>());
  EMBER_CHECK(p.is_array() && p.size() == 2 && is_pair(p[0]) && is_pair(p[1]), InvalidArgument)
      << who << ": config key \"" << key << "\" must be an int, [h, w] or [[top, bottom], [left, right]], got "
      << p.dump();
  return Padding2D(std::pair{p[0][0].get<int64_t>(), p[0][1].get<int64_t>()},
                   std::pair{p[1][0].get<int64_t>(), p[1][1].get<int64_t>()});
}

ZeroPadding2D::ZeroPadding2D(Padding2D padding, ZeroPadding2DOptions options)
    : Layer("zero_padding2d", {options.name, options.dtype, options.trainable}),
      padding_(padding),
      options_(std::move(options)) {
  const std::string w = who(*this);
  EMBER_CHECK(padding_.top >= 0 && padding_.bottom >= 0 && padding_.left >= 0 && padding_.right >= 0, InvalidArgument)
      << w << ": padding must be non-negative, got ((" << padding_.top << ", " << padding_.bottom << "), ("
      << padding_.left << ", " << padding_.right << "))";
  options_.data_format = conv_utils::standardize_data_format(options_.data_format, w);
}

Tensor ZeroPadding2D::call(const Tensor& x, bool training) {
  conv_utils::check_rank4(x.shape(), who(*this));
  return ops::pad(x, {{0, 0}, {padding_.top, padding_.bottom}, {padding_.left, padding_.right}, {0, 0}});
}

Shape ZeroPadding2D::compute_output_shape(const Shape& s) {
  conv_utils::check_rank4(s, who(*this));
  auto grow = [](int64_t d, int64_t before, int64_t after) { return d < 0 ? d : d + before + after; };
  return Shape{s[0], grow(s[1], padding_.top, padding_.bottom), grow(s[2], padding_.left, padding_.right), s[3]};
}

void ZeroPadding2D::check_input_shape(const std::vector<Shape>& shapes) const {
  EMBER_CHECK(shapes.size() == 1 && shapes[0].rank() == 4, InvalidArgument)
      << who(*this) << ": expected one rank-4 input (batch, height, width, channels), got "
      << (shapes.size() == 1 ? shapes[0].to_string() : std::to_string(shapes.size()) + " inputs");
}

nlohmann::json ZeroPadding2D::get_config() const {
  nlohmann::json c = base_config();
  c["padding"] = padding_.to_json();
  c["data_format"] = options_.data_format;
  return c;
}

LayerPtr ZeroPadding2D::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const Padding2D padding =
      Padding2D::from_json(c.value("padding", nlohmann::json(1)), "ZeroPadding2D '" + base.name + "'", "padding");
  return std::make_shared<ZeroPadding2D>(
      padding, ZeroPadding2DOptions{.data_format = conv_utils::data_format_from_config(c),
                                    .name = base.name,
                                    .dtype = base.dtype,
                                    .trainable = base.trainable});
}

EMBER_REGISTER_LAYER(ZeroPadding2D);

}  // namespace ember::layers
