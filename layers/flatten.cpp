#include "layers/flatten.h"

#include "framework/ops/array.h"
#include "layers/conv_utils.h"

namespace ember::layers {

using conv_utils::who;

Flatten::Flatten(FlattenOptions options)
    : Layer("flatten", {options.name, options.dtype, options.trainable}), options_(std::move(options)) {
  options_.data_format = conv_utils::standardize_data_format(options_.data_format, who(*this));
}

Tensor Flatten::call(const Tensor& x, bool training) {
  const Shape out = compute_output_shape(x.shape());
  return ops::reshape(x, out);  // explicit sizes, so an empty batch needs no -1 inference
}

Shape Flatten::compute_output_shape(const Shape& s) {
  EMBER_CHECK(s.rank() >= 1, InvalidArgument) << who(*this) << ": expected an input of rank >= 1, got a scalar";
  int64_t size = 1;
  for (int64_t d = 1; d < s.rank(); ++d) size = (size < 0 || s[d] < 0) ? -1 : size * s[d];
  return Shape{s[0], size};
}

void Flatten::check_input_shape(const std::vector<Shape>& shapes) const {
  EMBER_CHECK(shapes.size() == 1 && shapes[0].rank() >= 1, InvalidArgument)
      << who(*this) << ": expected one input of rank >= 1, got "
      << (shapes.size() == 1 ? shapes[0].to_string() : std::to_string(shapes.size()) + " inputs");
}

nlohmann::json Flatten::get_config() const {
  nlohmann::json c = base_config();
  c["data_format"] = options_.data_format;
  return c;
}

LayerPtr Flatten::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  return std::make_shared<Flatten>(FlattenOptions{.data_format = conv_utils::data_format_from_config(c),
                                                  .name = base.name,
                                                  .dtype = base.dtype,
                                                  .trainable = base.trainable});
}

EMBER_REGISTER_LAYER(Flatten);

}  // namespace ember::layers
