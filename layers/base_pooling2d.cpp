#include "framework/core/config_reader.h"
#include "layers/base_pooling2d.h"

namespace ember::layers {

using ::ember::detail::config_string;

using conv_utils::who;

Pooling2D::Pooling2D(const std::string& base_name, Size2 pool_size, Pooling2DOptions options)
    : Layer(base_name, {options.name, options.dtype, options.trainable}),
      pool_size_(pool_size),
      options_(std::move(options)) {
  if (options_.strides == Size2(0)) options_.strides = pool_size_;
}

void Pooling2D::validate() {
  const std::string w = who(*this);
  conv_utils::check_size2(pool_size_, 1, w, "pool_size");
  conv_utils::check_size2(options_.strides, 1, w, "strides");
  options_.padding = conv_utils::standardize_padding(options_.padding, w);
  options_.data_format = conv_utils::standardize_data_format(options_.data_format, w);
}

Tensor Pooling2D::call(const Tensor& x, bool training) {
  compute_output_shape(x.shape());
  return pool(x);
}

Shape Pooling2D::compute_output_shape(const Shape& input_shape) {
  return conv_utils::windowed_output_shape(input_shape, input_shape.rank() == 4 ? input_shape[3] : -1, pool_size_,
                                           options_.strides, Size2(1), options_.padding, 0, who(*this));
}

void Pooling2D::check_input_shape(const std::vector<Shape>& shapes) const {
  EMBER_CHECK(shapes.size() == 1 && shapes[0].rank() == 4, InvalidArgument)
      << who(*this) << ": expected one rank-4 input (batch, height, width, channels), got "
      << (shapes.size() == 1 ? shapes[0].to_string() : std::to_string(shapes.size()) + " inputs");
}

nlohmann::json Pooling2D::get_config() const {
  nlohmann::json c = base_config();
  c["pool_size"] = pool_size_.to_json();
  c["padding"] = options_.padding;
  c["strides"] = options_.strides.to_json();
  c["data_format"] = options_.data_format;
  return c;
}

std::pair<Size2, Pooling2DOptions> Pooling2D::parse_config(const nlohmann::json& c, const std::string& class_name) {
  LayerOptions base = options_from_config(c);
  const std::string w = class_name + " '" + base.name + "'";
  Pooling2DOptions o;
  Size2 pool_size = c.contains("pool_size") ? conv_utils::size2_from_json(c["pool_size"], w, "pool_size") : Size2(2);
  if (c.contains("strides") && !c["strides"].is_null()) o.strides = conv_utils::size2_from_json(c["strides"], w, "strides");
  o.padding = config_string(c, "padding", "valid", w);
  o.data_format = conv_utils::data_format_from_config(c);
  o.name = base.name;
  o.dtype = base.dtype;
  o.trainable = base.trainable;
  return {pool_size, o};
}

}  // namespace ember::layers
