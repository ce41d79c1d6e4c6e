#pragma once
// Shared assertions for tensor tests: exact or approximate comparison with readable failures.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "framework/ember.h"

namespace ember::testing {

inline const std::vector<DType> kFloatDTypes = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16};
inline const std::vector<DType> kAllDTypes = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16,
                                              DType::Int32,   DType::Int64,   DType::UInt8,   DType::Bool};

// Whether flags[from, to) all equal `value` (which thread made each element, ran each step, ...).
inline bool all_equal(const std::vector<bool>& flags, size_t from, size_t to, bool value) {
  return std::all_of(flags.begin() + static_cast<std::ptrdiff_t>(from),
                     flags.begin() + static_cast<std::ptrdiff_t>(to), [&](bool f) { return f == value; });
}

// start, start + 1, ... (n values).
inline std::vector<double> iota(int64_t n, double start = 0) {
  std::vector<double> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), start);
  return v;
}

// n values uniform in [-1, 1) from a seeded std::mt19937.
inline std::vector<double> uniform_values(int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> d(-1, 1);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = d(gen);
  return v;
}

// Values as a dtype holds them: Bool keeps only parity, so moved elements stay distinguishable.
inline std::vector<double> as_dtype_values(DType t, std::vector<double> v) {
  if (t == DType::Bool)
    for (double& x : v) x = std::fmod(x, 2.0);
  return v;
}

inline double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// x + a * d, elementwise.
inline std::vector<double> axpy(const std::vector<double>& x, double a, const std::vector<double>& d) {
  std::vector<double> r(x);
  for (size_t i = 0; i < r.size(); ++i) r[i] += a * d[i];
  return r;
}

// Whether two tensors hold the same bits: dtype, shape and every byte (of contiguous host copies).
inline bool same_bits(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined() || a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const Tensor x = a.to(Device::cpu()).clone(), y = b.to(Device::cpu()).clone();
  return std::memcmp(x.raw_data(), y.raw_data(), x.nbytes()) == 0;
}

// Values of any tensor as doubles (bool -> 0/1, half types widened).
inline std::vector<double> values_as_double(const Tensor& t) {
  Tensor h = t.to(Device::cpu());
  std::vector<double> out(static_cast<size_t>(h.num_elements()));
  EMBER_DISPATCH_ALL(h.dtype(), "values_as_double", {
    const scalar_t* p = static_cast<const scalar_t*>(h.raw_data());
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(p[i]);
  });
  return out;
}

// The largest |a - b| over the elements of two tensors of as many elements (any dtypes).
inline double max_abs_diff(const Tensor& a, const Tensor& b) {
  std::vector<double> x = values_as_double(a), y = values_as_double(b);
  REQUIRE(x.size() == y.size());
  double m = 0;
  for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

// Whether two value lists are equal element by element, NaN matching NaN.
inline bool same_values(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
  return true;
}

// Checks dtype, shape and every value within tolerance (NaN matches NaN, inf matches same-signed inf).
inline void check_tensor(const Tensor& t, DType dtype, const Shape& shape, const std::vector<double>& expected,
                         double rel = 1e-6, double abs_tol = 1e-6) {
  INFO("tensor: " << t.to_string());
  REQUIRE(t.dtype() == dtype);
  REQUIRE(t.shape() == shape);
  std::vector<double> got = values_as_double(t);
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", expected " << expected[i]);
    if (std::isnan(expected[i])) {
      CHECK(std::isnan(got[i]));
    } else if (std::isinf(expected[i])) {
      CHECK(got[i] == expected[i]);
    } else {
      CHECK(std::abs(got[i] - expected[i]) <= abs_tol + rel * std::abs(expected[i]));
    }
  }
}

// Tolerances that suit a dtype (half types carry 3 and 2 significant digits).
inline double tolerance_for(DType t) {
  switch (t) {
    case DType::Float16: return 2e-3;
    case DType::BFloat16: return 1.6e-2;
    case DType::Float32: return 1e-5;
    default: return 1e-12;
  }
}

// A tensor of dtype from double values (converted).
inline Tensor make(const std::vector<double>& values, const Shape& shape, DType dtype) {
  Tensor t = Tensor::empty(shape, dtype);
  REQUIRE(static_cast<int64_t>(values.size()) == shape.num_elements());
  EMBER_DISPATCH_ALL(dtype, "testing::make", {
    scalar_t* p = static_cast<scalar_t*>(t.raw_data());
    for (size_t i = 0; i < values.size(); ++i) p[i] = static_cast<scalar_t>(values[i]);
  });
  return t;
}

}  // namespace ember::testing
