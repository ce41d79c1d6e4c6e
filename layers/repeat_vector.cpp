#include "layers/repeat_vector.h"

#include "framework/core/config_reader.h"
#include "framework/ops/array.h"

namespace ember::layers {

RepeatVector::RepeatVector(int64_t n, LayerOptions options) : Layer("repeat_vector", options), n_(n) {
  EMBER_CHECK(n >= 1, InvalidArgument) << "RepeatVector '" << name() << "': n must be a positive integer, got " << n;
}

void RepeatVector::check_input_shape(const std::vector<Shape>& shapes) const {
  EMBER_CHECK(shapes.size() == 1 && shapes[0].rank() == 2, InvalidArgument)
      << "RepeatVector '" << name() << "': expected one rank-2 input (batch, features), got "
      << (shapes.size() == 1 ? "shape " + shapes[0].to_keras_string() : std::to_string(shapes.size()) + " inputs");
}

Shape RepeatVector::compute_output_shape(const Shape& input_shape) {
  check_input_shape({input_shape});
  return Shape{input_shape[0], n_, input_shape[1]};
}

// Keras: reshape to (batch, 1, features), then repeat n times along axis 1.
Tensor RepeatVector::call(const Tensor& x, bool training) {
  const Shape out = compute_output_shape(x.shape());
  return ops::broadcast_to(ops::reshape(x, {x.shape()[0], 1, x.shape()[1]}), out);
}

nlohmann::json RepeatVector::get_config() const {
  nlohmann::json c = base_config();
  c["n"] = n_;
  return c;
}

LayerPtr RepeatVector::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  return std::make_shared<RepeatVector>(::ember::detail::config_required_int(c, "n", "RepeatVector '" + base.name + "'"),
                                        base);
}

EMBER_REGISTER_LAYER(RepeatVector);

}  // namespace ember::layers
