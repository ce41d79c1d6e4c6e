#pragma once
// Backward formulas: one function per differentiable op, written with eager ops and registered from
// framework/autodiff/grads/<family>.cpp.
#include <span>
#include <vector>

#include "framework/core/tensor.h"
#include "framework/ops/attrs.h"
#include "framework/ops/op.h"

namespace ember {

// What a backward formula sees: the op's attributes, its saved forward inputs and outputs, the
// gradient of the target with respect to each output (zeros where none arrived), and which inputs lead
// to a source (a formula may return an undefined Tensor for the others instead of computing it).
struct GradContext {
  OpId op;
  const Attrs& attrs;
  std::span<const Tensor> inputs;
  std::span<const Tensor> outputs;
  std::span<const Tensor> grads;
  std::span<const char> wanted = {};  // per input; empty: all
  bool needs(size_t input) const { return wanted.empty() || wanted[input]; }
};
// Returns one gradient per input, shaped like that input; an undefined Tensor means none (integer
// inputs such as gather's indices).
using GradFn = std::vector<Tensor> (*)(const GradContext&);

void register_gradient(OpId op, GradFn fn);
// The formula of op, or nullptr.
GradFn gradient_function(OpId op);

#define EMBER_REGISTER_GRADIENT(op, fn)                                  \
  static const bool ember_gradient_registered_##op = [] {                \
    ::ember::register_gradient(::ember::OpId::op, fn);                   \
    return true;                                                         \
  }()

// Sums a broadcast gradient back down to `shape` (the inverse of NumPy broadcasting).
Tensor unbroadcast(const Tensor& grad, const Shape& shape);

// The gradient through an activation from its output y, with the formulas of relu, tanh and sigmoid themselves
// (relu_grad at y, dy (1 - y^2), dy (y (1 - y))); dy for None. What matmul_bias and conv2d_bias use for their fused
// activation.
Tensor fused_activation_grad(FusedActivation activation, const Tensor& dy, const Tensor& y);

}  // namespace ember
