// Keras 3's activations (keras/src/activations/activations.py with the TensorFlow backend's formulas),
// composed of framework ops so that the tape differentiates them.
#include "framework/model/activations.h"

#include <map>
#include <sstream>

#include "framework/core/error.h"
#include "framework/ops/creation.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/nn.h"

namespace ember::activations {

namespace {

// A C++ number as a 0-d tensor of x's dtype (as the Tensor operators make them).
Tensor activation_scalar(double v, const Tensor& x) { return Tensor::scalar_of(v, x.dtype(), Device::cpu()); }

Tensor hard_silu(const Tensor& x) { return x * hard_sigmoid(x); }
Tensor mish(const Tensor& x) { return x * ops::tanh(ops::softplus(x)); }
Tensor log_sigmoid(const Tensor& x) { return -ops::softplus(-x); }
Tensor celu(const Tensor& x) {  // alpha = 1: max(x, 0) + expm1(min(x, 0))
  const Tensor zero = activation_scalar(0.0, x);
  return ops::maximum(x, zero) + (ops::exp(ops::minimum(x, zero)) - 1.0);
}
Tensor hard_tanh(const Tensor& x) { return ops::clip_by_value(x, -1.0, 1.0); }
Tensor squareplus(const Tensor& x) { return (x + ops::sqrt(ops::square(x) + 4.0)) / 2.0; }
Tensor tanh_shrink(const Tensor& x) { return x - ops::tanh(x); }
Tensor soft_shrink(const Tensor& x) {  // threshold 0.5
  const Tensor zeros = ops::zeros_like(x);
  return ops::where(ops::greater(x, activation_scalar(0.5, x)), x - 0.5,
                    ops::where(ops::less(x, activation_scalar(-0.5, x)), x + 0.5, zeros));
}
Tensor hard_shrink(const Tensor& x) {  // threshold 0.5
  return ops::where(ops::greater(ops::abs(x), activation_scalar(0.5, x)), x, ops::zeros_like(x));
}
Tensor sparse_plus(const Tensor& x) {
  const Tensor quadratic = ops::square(x + 1.0) * 0.25;
  return ops::where(ops::less_equal(x, activation_scalar(-1.0, x)), ops::zeros_like(x),
                    ops::where(ops::less(x, activation_scalar(1.0, x)), quadratic, x));
}
Tensor sparse_sigmoid(const Tensor& x) {
  const Tensor linear_part = (x + 1.0) * 0.5;
  return ops::where(ops::less_equal(x, activation_scalar(-1.0, x)), ops::zeros_like(x),
                    ops::where(ops::greater_equal(x, activation_scalar(1.0, x)), ops::ones_like(x), linear_part));
}

// Keras's ALL_OBJECTS_DICT for the activations Ember has, with its aliases (swish, hard_swish).
const std::map<std::string, Activation>& table() {
  static const std::map<std::string, Activation> t = {
      {"linear", linear},
      {"relu", relu},
      {"sigmoid", sigmoid},
      {"tanh", tanh},
      {"softmax", [](const Tensor& x) { return softmax(x); }},
      {"log_softmax", [](const Tensor& x) { return log_softmax(x); }},
      {"gelu", [](const Tensor& x) { return gelu(x); }},
      {"silu", silu},
      {"swish", swish},
      {"elu", [](const Tensor& x) { return elu(x); }},
      {"selu", selu},
      {"softplus", softplus},
      {"softsign", softsign},
      {"relu6", relu6},
      {"hard_sigmoid", hard_sigmoid},
      {"exponential", exponential},
      {"leaky_relu", [](const Tensor& x) { return leaky_relu(x); }},
      {"hard_silu", hard_silu},
      {"hard_swish", hard_silu},
      {"mish", mish},
      {"log_sigmoid", log_sigmoid},
      {"celu", celu},
      {"hard_tanh", hard_tanh},
      {"squareplus", squareplus},
      {"tanh_shrink", tanh_shrink},
      {"soft_shrink", soft_shrink},
      {"hard_shrink", hard_shrink},
      {"sparse_plus", sparse_plus},
      {"sparse_sigmoid", sparse_sigmoid},
  };
  return t;
}

}  // namespace

Activation get(const std::string& name) {
  if (name.empty()) return linear;
  const auto& t = table();
  auto it = t.find(name);
  if (it != t.end()) return it->second;
  std::ostringstream known;
  for (const std::string& n : names()) known << (known.tellp() > 0 ? ", " : "") << n;
  throw InvalidArgument("Unknown activation \"" + name + "\"; known activations: " + known.str());
}

std::vector<std::string> names() {
  std::vector<std::string> out;
  for (const auto& [name, fn] : table()) out.push_back(name);
  return out;
}

Tensor linear(const Tensor& x) { return x; }
Tensor relu(const Tensor& x) { return ops::relu(x); }
Tensor sigmoid(const Tensor& x) { return ops::sigmoid(x); }
Tensor tanh(const Tensor& x) { return ops::tanh(x); }
Tensor softmax(const Tensor& x, int64_t axis) { return ops::softmax(x, axis); }
Tensor log_softmax(const Tensor& x, int64_t axis) { return ops::log_softmax(x, axis); }
Tensor gelu(const Tensor& x, bool approximate) { return ops::gelu(x, approximate); }
Tensor silu(const Tensor& x) { return ops::silu(x); }
Tensor swish(const Tensor& x) { return ops::swish(x); }

// TF backend: where(x > 0, elu(x), alpha * elu(x)), so alpha = 1 is exactly tf.nn.elu.
Tensor elu(const Tensor& x, double alpha) {
  Tensor e = ops::elu(x);
  if (alpha == 1.0) return e;
  return ops::where(ops::greater(x, activation_scalar(0.0, x)), e, e * alpha);
}

Tensor selu(const Tensor& x) { return ops::selu(x); }
Tensor softplus(const Tensor& x) { return ops::softplus(x); }
Tensor softsign(const Tensor& x) { return ops::softsign(x); }
Tensor relu6(const Tensor& x) { return ops::relu6(x); }
// Keras 3: relu6(x + 3) / 6 (Keras 2's was clip(0.2 x + 0.5, 0, 1)).
Tensor hard_sigmoid(const Tensor& x) { return ops::relu6(x + 3.0) / 6.0; }
Tensor exponential(const Tensor& x) { return ops::exp(x); }

// tf.nn.leaky_relu: x where x > 0, else negative_slope * x (any slope, so not max(x, slope * x)).
Tensor leaky_relu(const Tensor& x, double negative_slope) {
  return ops::where(ops::greater(x, activation_scalar(0.0, x)), x, x * negative_slope);
}

}  // namespace ember::activations
