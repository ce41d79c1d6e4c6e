#include "layers/softmax.h"

#include "framework/core/config_reader.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/nn.h"
#include "framework/ops/reduce.h"

namespace ember::layers {

using ::ember::detail::config_int_list;

Softmax::Softmax(SoftmaxOptions options)
    : Layer("softmax", {options.name, options.dtype, options.trainable}), options_(std::move(options)) {
  EMBER_CHECK(!options_.axis.empty(), InvalidArgument) << "Softmax '" << name() << "': axis must name at least one axis";
}

void Softmax::check_axes(const Shape& shape) const {
  for (int64_t a : options_.axis)
    EMBER_CHECK(a >= -shape.rank() && a < shape.rank(), InvalidArgument)
        << "Softmax '" << name() << "': axis " << a << " is out of range for an input of shape " << shape;
}

void Softmax::check_input_shape(const std::vector<Shape>& shapes) const {
  EMBER_CHECK(shapes.size() == 1, InvalidArgument)
      << "Softmax '" << name() << "': expected one input, got " << shapes.size();
  check_axes(shapes[0]);
}

Tensor Softmax::call(const Tensor& x, bool training) {
  check_axes(x.shape());
  if (options_.axis.size() == 1) return ops::softmax(x, options_.axis[0]);
  // Several axes: Keras's exp(x - logsumexp(x, axes)).
  return ops::exp(x - ops::reduce_logsumexp(x, options_.axis, true));
}

Shape Softmax::compute_output_shape(const Shape& input_shape) {
  check_axes(input_shape);
  return input_shape;
}

nlohmann::json Softmax::get_config() const {
  nlohmann::json c = base_config();
  // One axis is written as Keras's default form, an int.
  c["axis"] = options_.axis.size() == 1 ? nlohmann::json(options_.axis[0]) : nlohmann::json(options_.axis);
  return c;
}

LayerPtr Softmax::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const std::string who = "Softmax '" + base.name + "'";
  SoftmaxOptions o;
  o.axis = config_int_list(c, "axis", o.axis, who);
  o.name = base.name;
  o.dtype = base.dtype;
  o.trainable = base.trainable;
  return std::make_shared<Softmax>(o);
}

EMBER_REGISTER_LAYER(Softmax);

}  // namespace ember::layers
