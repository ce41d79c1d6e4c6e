#pragma once
// Gradient checker (flashlight's jacobianTestImpl): tape gradients of L = reduce_sum(f(inputs) * w), w a
// fixed random weight, against float64 central differences of L, for every element of every float input.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "framework/autodiff/gradient_tape.h"
#include "framework/ember.h"
#include "tests/support/tensor_testing.h"

namespace ember::testing {

using TensorFn = std::function<Tensor(const std::vector<Tensor>&)>;

struct GradCheckOptions {
  double h = 1e-6;      // central-difference step
  double rtol = 1e-6;   // |tape - numeric| <= atol + rtol * |numeric|
  double atol = 1e-7;
  uint32_t seed = 1234; // of the weight w
};

// What one check found: ok, or the first mismatches in words.
struct GradCheckResult {
  bool ok = true;
  std::string message;
  double max_abs_error = 0;
};

// Values of n elements uniform in [lo, hi).
inline std::vector<double> uniform_in(int64_t n, double lo, double hi, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = d(gen);
  return v;
}

// A float64 tensor uniform in [lo, hi).
inline Tensor rand64(const Shape& shape, uint32_t seed, double lo = -1, double hi = 1) {
  return make(uniform_in(shape.num_elements(), lo, hi, seed), shape, DType::Float64);
}

// A float64 tensor whose magnitudes lie in [lo, hi) with random signs: away from kinks at 0.
inline Tensor rand64_away_from_zero(const Shape& shape, uint32_t seed, double lo = 0.2, double hi = 1.5) {
  std::vector<double> v = uniform_in(shape.num_elements(), lo, hi, seed);
  std::vector<double> s = uniform_in(shape.num_elements(), -1, 1, seed + 7919);
  for (size_t i = 0; i < v.size(); ++i)
    if (s[i] < 0) v[i] = -v[i];
  return make(v, shape, DType::Float64);
}

// A float64 tensor of `shape` produced by ops::transpose of a tensor of the reversed shape (the layout
// a transposed operand has), rather than built directly.
inline Tensor transposed64(const Shape& shape, uint32_t seed, double lo = -1, double hi = 1) {
  std::vector<int64_t> rev(shape.begin(), shape.end());
  std::reverse(rev.begin(), rev.end());
  return ops::transpose(rand64(Shape(rev), seed, lo, hi));
}

// Rows [1, 1 + shape[0]) of a bigger tensor: a view at a non-zero storage offset.
inline Tensor offset_rows64(const Shape& shape, uint32_t seed, double lo = -1, double hi = 1) {
  std::vector<int64_t> big = shape.dims();
  big[0] += 2;
  return rand64(Shape(big), seed, lo, hi).slice_rows(1, 1 + shape.dims()[0]);
}

// sum(values(out) * w) in float64 on the host.
inline double weighted_sum(const Tensor& out, const std::vector<double>& w) {
  std::vector<double> v = values_as_double(out);
  double s = 0;
  for (size_t i = 0; i < v.size(); ++i) s += v[i] * w[i];
  return s;
}

// Compares tape and numeric gradients of f at inputs. The tape's target is f's output with
// output_gradients = w, which is dL/dinputs of L = reduce_sum(f * w) without recording the mul and the
// sum, so a missing formula for those does not mask the op under test.
inline GradCheckResult grad_check(const TensorFn& f, const std::vector<Tensor>& inputs, GradCheckOptions opt = {}) {
  GradCheckResult res;
  std::ostringstream msg;
  int reported = 0;
  auto fail = [&](const std::string& text) {
    res.ok = false;
    if (reported++ < 6) msg << text << "\n";
  };

  std::vector<Tensor> grads;
  std::vector<double> w;
  try {
    GradientTape tape;
    for (const Tensor& x : inputs)
      if (is_floating(x.dtype())) tape.watch(x);
    Tensor y = f(inputs);
    if (!y.defined() || !is_floating(y.dtype())) {
      res.ok = false;
      res.message = "f returned an undefined or non-float tensor";
      return res;
    }
    w = uniform_in(y.num_elements(), -1, 1, opt.seed);
    Tensor wt = make(w, y.shape(), y.dtype());
    GradientOptions go;
    go.output_gradients = {wt};
    go.unconnected_gradients = UnconnectedGradients::Zero;
    grads = tape.gradient(y, inputs, go);
  } catch (const std::exception& e) {
    res.ok = false;
    res.message = std::string("tape threw: ") + e.what();
    return res;
  }

  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& x = inputs[i];
    if (!is_floating(x.dtype())) continue;
    const Tensor& g = grads[i];
    if (!g.defined()) {
      fail("input " + std::to_string(i) + ": gradient undefined");
      continue;
    }
    if (g.shape() != x.shape() || g.dtype() != x.dtype()) {
      std::ostringstream os;
      os << "input " << i << ": gradient is " << g.dtype() << " " << g.shape() << ", input " << x.dtype() << " "
         << x.shape();
      fail(os.str());
      continue;
    }
    std::vector<double> tape_g = values_as_double(g);
    std::vector<double> base = values_as_double(x);
    std::vector<Tensor> probe = inputs;
    for (size_t j = 0; j < base.size(); ++j) {
      std::vector<double> v = base;
      double numeric = 0;
      try {
        v[j] = base[j] + opt.h;
        probe[i] = make(v, x.shape(), x.dtype());
        const double lp = weighted_sum(f(probe), w);
        v[j] = base[j] - opt.h;
        probe[i] = make(v, x.shape(), x.dtype());
        const double lm = weighted_sum(f(probe), w);
        numeric = (lp - lm) / (2 * opt.h);
      } catch (const std::exception& e) {
        fail(std::string("forward threw during finite differences: ") + e.what());
        return res.message = msg.str(), res;
      }
      const double err = std::abs(tape_g[j] - numeric);
      res.max_abs_error = std::max(res.max_abs_error, err);
      if (!(err <= opt.atol + opt.rtol * std::abs(numeric))) {
        std::ostringstream os;
        os.precision(10);
        os << "input " << i << " " << x.shape() << " element " << j << ": tape " << tape_g[j] << ", numeric "
           << numeric << " (x = " << base[j] << ")";
        fail(os.str());
      }
    }
    probe[i] = x;
  }
  if (reported > 6) msg << "... " << (reported - 6) << " more mismatches\n";
  res.message = msg.str();
  return res;
}

// f's first-order gradient with respect to input k as a function of the inputs (an inner tape with a
// fixed output weight): checking it with grad_check tests second-order gradients through nested tapes.
inline TensorFn gradient_of(TensorFn f, size_t k, uint32_t seed = 99) {
  return [f = std::move(f), k, seed](const std::vector<Tensor>& inputs) {
    GradientTape inner;
    for (const Tensor& x : inputs)
      if (is_floating(x.dtype())) inner.watch(x);
    Tensor y = f(inputs);
    GradientOptions go;
    go.output_gradients = {make(uniform_in(y.num_elements(), -1, 1, seed), y.shape(), y.dtype())};
    go.unconnected_gradients = UnconnectedGradients::Zero;
    return inner.gradient(y, inputs, go)[k];
  };
}

// Catch assertion form: fails with the mismatches and `what` (the op and case) in the message.
inline void check_gradients(const std::string& what, const TensorFn& f, const std::vector<Tensor>& inputs,
                            GradCheckOptions opt = {}) {
  GradCheckResult r = grad_check(f, inputs, opt);
  INFO(what << ":\n" << r.message);
  CHECK(r.ok);
}

}  // namespace ember::testing
