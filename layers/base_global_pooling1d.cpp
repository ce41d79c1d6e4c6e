#include "layers/base_global_pooling1d.h"

#include "framework/core/config_reader.h"
#include "layers/conv_utils.h"

namespace ember::layers {

using ::ember::detail::config_bool;

using conv_utils::who;

GlobalPooling1D::GlobalPooling1D(const std::string& base_name, GlobalPooling1DOptions options)
    : Layer(base_name, {options.name, options.dtype, options.trainable}), options_(std::move(options)) {}

void GlobalPooling1D::validate() {
  options_.data_format = conv_utils::standardize_data_format(options_.data_format, who(*this));
}

Tensor GlobalPooling1D::call(const Tensor& x, bool training) {
  conv_utils::check_rank3(x.shape(), who(*this));
  return reduce(x);
}

Shape GlobalPooling1D::compute_output_shape(const Shape& input_shape) {
  conv_utils::check_rank3(input_shape, who(*this));
  if (options_.keepdims) return Shape{input_shape[0], 1, input_shape[2]};
  return Shape{input_shape[0], input_shape[2]};
}

void GlobalPooling1D::check_input_shape(const std::vector<Shape>& shapes) const {
  EMBER_CHECK(shapes.size() == 1 && shapes[0].rank() == 3, InvalidArgument)
      << who(*this) << ": expected one rank-3 input (batch, steps, channels), got "
      << (shapes.size() == 1 ? shapes[0].to_string() : std::to_string(shapes.size()) + " inputs");
}

nlohmann::json GlobalPooling1D::get_config() const {
  nlohmann::json c = base_config();
  c["data_format"] = options_.data_format;
  c["keepdims"] = options_.keepdims;
  return c;
}

GlobalPooling1DOptions GlobalPooling1D::parse_config(const nlohmann::json& c, const std::string& class_name) {
  LayerOptions base = options_from_config(c);
  const std::string who = class_name + " '" + base.name + "'";
  GlobalPooling1DOptions o;
  o.data_format = conv_utils::data_format_from_config(c);
  o.keepdims = config_bool(c, "keepdims", false, who);
  o.name = base.name;
  o.dtype = base.dtype;
  o.trainable = base.trainable;
  return o;
}

}  // namespace ember::layers
