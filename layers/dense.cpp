#include "layers/dense.h"

#include "framework/core/config_reader.h"
#include "framework/model/activations.h"
#include "framework/ops/array.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/linalg.h"

namespace ember::layers {

using ::ember::detail::config_bool;
using ::ember::detail::config_required_int;
using ::ember::detail::config_string;

Dense::Dense(int64_t units, DenseOptions options)
    : Layer("dense", {options.name, options.dtype, options.trainable}), units_(units), options_(std::move(options)) {
  supports_masking_ = true;  // passes its input's mask on (Keras)
  EMBER_CHECK(units > 0, InvalidArgument) << "Dense: units must be positive, got " << units;
  activations::get(options_.activation);  // an unknown name fails here, not at the first call
}

void Dense::build(const Shape& input_shape) {
  EMBER_CHECK(input_shape.rank() >= 2 && input_shape[input_shape.rank() - 1] > 0, InvalidArgument)
      << "Dense '" << name() << "': expected an input of rank >= 2 with a known last dimension, got shape "
      << input_shape;
  const int64_t in = input_shape[input_shape.rank() - 1];
  kernel_ = add_weight("kernel", {in, units_}, options_.kernel_initializer, true, options_.kernel_regularizer);
  if (options_.use_bias) bias_ = add_weight("bias", {units_}, options_.bias_initializer, true, options_.bias_regularizer);
}

void Dense::check_input_shape(const std::vector<Shape>& shapes) const {
  const Shape& s = shapes.at(0);
  const int64_t in = kernel_.shape()[0];
  EMBER_CHECK(shapes.size() == 1 && s.rank() >= 2 && s[s.rank() - 1] == in, InvalidArgument)
      << "Dense '" << name() << "': expected an input of shape (..., " << in << "), got " << s;
}

// One fused op where Keras's graph would be fused by TF's remapper: matmul_bias_relu for a relu Dense,
// matmul_bias (then the activation) for another with a bias.
Tensor Dense::call(const Tensor& x, bool training) {
  const bool relu = options_.use_bias && options_.activation == "relu";
  auto product = [&](const Tensor& x2) {
    if (!options_.use_bias) return ops::matmul(x2, read(kernel_));
    return relu ? ops::matmul_bias_relu(x2, read(kernel_), read(bias_)) : ops::matmul_bias(x2, read(kernel_), read(bias_));
  };
  Tensor y;
  if (x.rank() == 2) {
    y = product(x);
  } else {  // (..., in) -> flatten leading dims for one GEMM, as Keras's tensordot does
    Shape out = x.shape();
    out[out.rank() - 1] = units_;
    y = ops::reshape(product(ops::reshape(x, {-1, x.shape()[x.rank() - 1]})), out);
  }
  return relu ? y : activations::get(options_.activation)(y);
}

Shape Dense::compute_output_shape(const Shape& input_shape) {
  Shape out = input_shape;
  out[out.rank() - 1] = units_;
  return out;
}

nlohmann::json Dense::get_config() const {
  nlohmann::json c = base_config();
  c["units"] = units_;
  c["activation"] = options_.activation.empty() ? "linear" : options_.activation;
  c["use_bias"] = options_.use_bias;
  c["kernel_initializer"] = options_.kernel_initializer.to_json();
  c["bias_initializer"] = options_.bias_initializer.to_json();
  c["kernel_regularizer"] = options_.kernel_regularizer.to_json();
  c["bias_regularizer"] = options_.bias_regularizer.to_json();
  c["kernel_constraint"] = nullptr;
  c["bias_constraint"] = nullptr;
  return c;
}

LayerPtr Dense::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const std::string who = "Dense '" + base.name + "'";
  DenseOptions o;
  o.activation = config_string(c, "activation", "linear", who);
  if (o.activation == "linear") o.activation.clear();
  o.use_bias = config_bool(c, "use_bias", true, who);
  if (c.contains("kernel_initializer")) o.kernel_initializer = Initializer::from_json(c["kernel_initializer"]);
  if (c.contains("bias_initializer")) o.bias_initializer = Initializer::from_json(c["bias_initializer"]);
  if (c.contains("kernel_regularizer")) o.kernel_regularizer = Regularizer::from_json(c["kernel_regularizer"]);
  if (c.contains("bias_regularizer")) o.bias_regularizer = Regularizer::from_json(c["bias_regularizer"]);
  o.name = base.name;
  o.dtype = base.dtype;
  o.trainable = base.trainable;
  return std::make_shared<Dense>(config_required_int(c, "units", who), o);
}

EMBER_REGISTER_LAYER(Dense);

}  // namespace ember::layers
