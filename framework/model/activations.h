#pragma once
// Activation functions by Keras name (keras.activations): relu, sigmoid, tanh, softmax, gelu, silu/swish,
// elu, selu, softplus, softsign, linear, ... built from framework ops (no backward code).
#include <functional>
#include <string>
#include <vector>

#include "framework/core/tensor.h"

namespace ember::activations {

using Activation = std::function<Tensor(const Tensor&)>;

// The activation called name ("" and "linear" are the identity); unknown names are InvalidArgument
// listing the known ones. Keras's gelu default is approximate=false.
Activation get(const std::string& name);
// The names get() accepts.
std::vector<std::string> names();

Tensor linear(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor softmax(const Tensor& x, int64_t axis = -1);
Tensor log_softmax(const Tensor& x, int64_t axis = -1);
Tensor gelu(const Tensor& x, bool approximate = false);
Tensor silu(const Tensor& x);
Tensor swish(const Tensor& x);
Tensor elu(const Tensor& x, double alpha = 1.0);
Tensor selu(const Tensor& x);
Tensor softplus(const Tensor& x);
Tensor softsign(const Tensor& x);
Tensor relu6(const Tensor& x);
Tensor hard_sigmoid(const Tensor& x);
Tensor exponential(const Tensor& x);
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.2);

}  // namespace ember::activations
