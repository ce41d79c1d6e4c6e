#include "layers/base_pooling1d.h"

#include "framework/core/config_reader.h"
#include "framework/ops/array.h"

namespace ember::layers {

using ::ember::detail::config_string;

using conv_utils::who;

Pooling1D::Pooling1D(const std::string& base_name, int64_t pool_size, Pooling1DOptions options)
    : Layer(base_name, {options.name, options.dtype, options.trainable}),
      pool_size_(pool_size),
      options_(std::move(options)) {
  if (options_.strides == 0) options_.strides = pool_size_;
}

void Pooling1D::validate() {
  const std::string w = who(*this);
  conv_utils::check_size1(pool_size_, 1, w, "pool_size");
  conv_utils::check_size1(options_.strides, 1, w, "strides");
  options_.padding = conv_utils::standardize_padding(options_.padding, w);
  options_.data_format = conv_utils::standardize_data_format(options_.data_format, w);
}

Tensor Pooling1D::call(const Tensor& x, bool training) {
  compute_output_shape(x.shape());
  return ops::squeeze(pool(ops::expand_dims(x, 1)), {1});
}

Shape Pooling1D::compute_output_shape(const Shape& input_shape) {
  return conv_utils::windowed_output_shape_1d(input_shape, input_shape.rank() == 3 ? input_shape[2] : -1,
                                              pool_size_, options_.strides, 1, options_.padding, 0, who(*this));
}

void Pooling1D::check_input_shape(const std::vector<Shape>& shapes) const {
  EMBER_CHECK(shapes.size() == 1 && shapes[0].rank() == 3, InvalidArgument)
      << who(*this) << ": expected one rank-3 input (batch, steps, channels), got "
      << (shapes.size() == 1 ? shapes[0].to_string() : std::to_string(shapes.size()) + " inputs");
}

nlohmann::json Pooling1D::get_config() const {
  nlohmann::json c = base_config();
  c["pool_size"] = nlohmann::json::array({pool_size_});
  c["padding"] = options_.padding;
  c["strides"] = nlohmann::json::array({options_.strides});
  c["data_format"] = options_.data_format;
  return c;
}

std::pair<int64_t, Pooling1DOptions> Pooling1D::parse_config(const nlohmann::json& c, const std::string& class_name) {
  LayerOptions base = options_from_config(c);
  const std::string w = class_name + " '" + base.name + "'";
  Pooling1DOptions o;
  const int64_t pool_size = c.contains("pool_size") ? conv_utils::size1_from_json(c["pool_size"], w, "pool_size") : 2;
  if (c.contains("strides") && !c["strides"].is_null())
    o.strides = conv_utils::size1_from_json(c["strides"], w, "strides");
  o.padding = config_string(c, "padding", "valid", w);
  o.data_format = conv_utils::data_format_from_config(c);
  o.name = base.name;
  o.dtype = base.dtype;
  o.trainable = base.trainable;
  return {pool_size, o};
}

}  // namespace ember::layers
