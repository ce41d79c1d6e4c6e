#pragma once
// Host scalar arithmetic that rounds like a 0-d TF tensor of a given dtype. Keras computes optimizer
// hyperparameter terms (bias corrections, schedule values) as float32 tensors; doing the same on the
// host keeps the updates bit-close to Keras without a device round trip per term.
#include <cmath>

#include "framework/core/dtype.h"

namespace ember::optimizers::detail {

// A number held as `dtype` holds it; every operation rounds its result to `dtype` (float32 math is
// done in float, so it is exactly TF's float32 arithmetic, transcendental functions included).
class Scalar {
 public:
  // Converts value to dtype (Keras: ops.cast(python_number, dtype)).
  Scalar(double value, DType dtype) : dtype_(dtype), value_(round(value, dtype)) {}

  // Keras's ops.cast(python_number, dtype): tf.cast makes a float32 tensor of the number first, so a
  // float64 variable sees beta_1 = 0.9f, not 0.9. (A Python number meeting a tensor in an op converts
  // straight to the tensor's dtype instead: the plain constructor.)
  static Scalar cast(double python_number, DType dtype) {
    return Scalar(static_cast<double>(static_cast<float>(python_number)), dtype);
  }

  double value() const { return value_; }
  DType dtype() const { return dtype_; }

  friend Scalar operator+(Scalar a, Scalar b) { return a.binary(b, [](auto x, auto y) { return x + y; }); }
  friend Scalar operator-(Scalar a, Scalar b) { return a.binary(b, [](auto x, auto y) { return x - y; }); }
  friend Scalar operator*(Scalar a, Scalar b) { return a.binary(b, [](auto x, auto y) { return x * y; }); }
  friend Scalar operator/(Scalar a, Scalar b) { return a.binary(b, [](auto x, auto y) { return x / y; }); }
  // A C++ number meeting a Scalar takes its dtype first, as a Python number meeting a tensor does.
  friend Scalar operator+(Scalar a, double b) { return a + Scalar(b, a.dtype_); }
  friend Scalar operator-(Scalar a, double b) { return a - Scalar(b, a.dtype_); }
  friend Scalar operator*(Scalar a, double b) { return a * Scalar(b, a.dtype_); }
  friend Scalar operator/(Scalar a, double b) { return a / Scalar(b, a.dtype_); }
  friend Scalar operator+(double a, Scalar b) { return Scalar(a, b.dtype_) + b; }
  friend Scalar operator-(double a, Scalar b) { return Scalar(a, b.dtype_) - b; }
  friend Scalar operator*(double a, Scalar b) { return Scalar(a, b.dtype_) * b; }
  friend Scalar operator/(double a, Scalar b) { return Scalar(a, b.dtype_) / b; }

  friend Scalar pow(Scalar a, Scalar b) { return a.binary(b, [](auto x, auto y) { return std::pow(x, y); }); }
  friend Scalar pow(double a, Scalar b) { return pow(Scalar(a, b.dtype_), b); }
  friend Scalar sqrt(Scalar a) { return a.unary([](auto x) { return std::sqrt(x); }); }
  friend Scalar cos(Scalar a) { return a.unary([](auto x) { return std::cos(x); }); }
  friend Scalar log(Scalar a) { return a.unary([](auto x) { return std::log(x); }); }
  friend Scalar floor(Scalar a) { return a.unary([](auto x) { return std::floor(x); }); }
  friend Scalar ceil(Scalar a) { return a.unary([](auto x) { return std::ceil(x); }); }
  friend Scalar minimum(Scalar a, Scalar b) { return a.binary(b, [](auto x, auto y) { return x < y ? x : y; }); }

 private:
  static double round(double v, DType dtype) {
    switch (dtype) {
      case DType::Float32: return static_cast<float>(v);
      case DType::Float16: return static_cast<float>(half(static_cast<float>(v)));
      case DType::BFloat16: return static_cast<float>(bfloat16(static_cast<float>(v)));
      default: return v;
    }
  }
  // float64 computes in double; float32 and the half types in float (then round), as TF's kernels do.
  template <class F>
  Scalar binary(Scalar b, F f) const {
    if (dtype_ == DType::Float64) return Scalar(f(value_, b.value_), dtype_);
    return Scalar(f(static_cast<float>(value_), static_cast<float>(b.value_)), dtype_);
  }
  template <class F>
  Scalar unary(F f) const {
    if (dtype_ == DType::Float64) return Scalar(f(value_), dtype_);
    return Scalar(f(static_cast<float>(value_)), dtype_);
  }

  DType dtype_;
  double value_;
};

}  // namespace ember::optimizers::detail
