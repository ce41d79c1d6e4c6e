#pragma once
// Elementwise ops (TF: tf.math.*, tf.nn activations) and the C++ operators on Tensor.
// Binary ops broadcast like NumPy; both inputs must share a dtype (a C++ scalar takes the tensor's).
#include "framework/core/tensor.h"

namespace ember::ops {

// unary (floating unless noted)
Tensor neg(const Tensor& x);         // numeric
Tensor abs(const Tensor& x);         // numeric
Tensor sign(const Tensor& x);        // numeric
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor log1p(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor square(const Tensor& x);      // numeric
Tensor reciprocal(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);        // numeric
Tensor relu6(const Tensor& x);       // numeric
Tensor elu(const Tensor& x);
Tensor selu(const Tensor& x);
// approximate = true: the tanh approximation; false: the exact erf form (TF's default).
Tensor gelu(const Tensor& x, bool approximate = false);
Tensor softplus(const Tensor& x);
Tensor softsign(const Tensor& x);
Tensor swish(const Tensor& x);       // x * sigmoid(x)
Tensor silu(const Tensor& x);        // same as swish
Tensor floor(const Tensor& x);
Tensor ceil(const Tensor& x);
Tensor round(const Tensor& x);       // half to even, as TF
Tensor is_finite(const Tensor& x);   // -> bool
Tensor logical_not(const Tensor& x); // bool -> bool
// Converts to dtype (floats to integers truncate toward zero; to bool: x != 0).
Tensor cast(const Tensor& x, DType dtype);

// binary
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);       // integer: truncating; by zero: InvalidArgument
// a / b, and 0 where b == 0 whatever a is (TF: tf.math.divide_no_nan), floating types; its gradient is 0
// there too, not NaN.
Tensor div_no_nan(const Tensor& a, const Tensor& b);
Tensor floordiv(const Tensor& a, const Tensor& b);  // rounds toward -inf
Tensor mod(const Tensor& a, const Tensor& b);       // result has the sign of b (Python/TF floormod)
Tensor pow(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor squared_difference(const Tensor& a, const Tensor& b);
// relu's backward pass in one elementwise pass (TF ReluGrad): gradients where features > 0, else 0.
Tensor relu_grad(const Tensor& gradients, const Tensor& features);  // numeric
Tensor equal(const Tensor& a, const Tensor& b);     // -> bool
Tensor not_equal(const Tensor& a, const Tensor& b);
Tensor less(const Tensor& a, const Tensor& b);
Tensor less_equal(const Tensor& a, const Tensor& b);
Tensor greater(const Tensor& a, const Tensor& b);
Tensor greater_equal(const Tensor& a, const Tensor& b);
Tensor logical_and(const Tensor& a, const Tensor& b);  // bool
Tensor logical_or(const Tensor& a, const Tensor& b);

// cond (bool) ? a : b, all three broadcast together.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
// maximum(minimum(x, hi), lo), TF's formula (lo wins when lo > hi); lo and hi broadcast to x's shape.
Tensor clip_by_value(const Tensor& x, const Tensor& lo, const Tensor& hi);
Tensor clip_by_value(const Tensor& x, double lo, double hi);

}  // namespace ember::ops

namespace ember {
// Operators broadcast like the ops above; a C++ number takes the tensor's dtype.
Tensor operator-(const Tensor& x);
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(double a, const Tensor& b);
}  // namespace ember
