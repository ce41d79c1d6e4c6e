// Tensor::to_string against NumPy's str() (numpy 2.x with legacy='2.2' print options), with NumPy's line
// breaks written as single spaces. Every expected string below was produced by NumPy.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <sstream>

#include "framework/ember.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using ember::testing::make;

namespace {

// The values part of to_string, checking the frame around it.
std::string values(const Tensor& t) {
  std::string s = t.to_string();
  const std::string tail = ", shape=" + t.shape().to_string() + ", dtype=" + dtype_name(t.dtype()) + ", device=cpu:0)";
  REQUIRE(s.rfind("ember.Tensor(", 0) == 0);
  REQUIRE(s.size() > tail.size());
  REQUIRE(s.substr(s.size() - tail.size()) == tail);
  return s.substr(13, s.size() - 13 - tail.size());
}

Tensor iota(int64_t n, DType dtype) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<double>(i);
  return make(v, Shape{n}, dtype);
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

TEST_CASE("to_string frames the values as TF does", "[core][print]") {
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  CHECK(a.to_string() == "ember.Tensor([[1. 2.] [3. 4.]], shape=(2, 2), dtype=float32, device=cpu:0)");
  std::ostringstream os;
  os << a;
  CHECK(os.str() == a.to_string());
  CHECK(Tensor::scalar<float>(3.0f).to_string() == "ember.Tensor(3.0, shape=(), dtype=float32, device=cpu:0)");
  CHECK(Tensor().to_string() == "ember.Tensor(<undefined>)");
}

TEST_CASE("to_string float32 follows NumPy's maxprec layout", "[core][print]") {
  CHECK(values(make({1.5, 2.25, -3}, {3}, DType::Float32)) == "[ 1.5   2.25 -3.  ]");
  CHECK(values(make({3.14159265, -2.71828, 100, 0.1}, {4}, DType::Float32)) ==
        "[  3.1415927  -2.71828   100.          0.1      ]");
  CHECK(values(make({-0.0, 0.0, 1.0}, {3}, DType::Float32)) == "[-0.  0.  1.]");
  CHECK(values(make({0, 0}, {2}, DType::Float32)) == "[0. 0.]");
  // Scientific when min < 1e-4, max >= 1e8 or max/min > 1e3; precision is the longest mantissa.
  CHECK(values(make({1e-5, 1.5}, {2}, DType::Float32)) == "[1.0e-05 1.5e+00]");
  CHECK(values(make({1e8, 1}, {2}, DType::Float32)) == "[1.e+08 1.e+00]");
  // NaN and inf widen the columns; all-nonfinite arrays print bare.
  CHECK(values(make({kNaN, -kInf, 1.5}, {3}, DType::Float32)) == "[ nan -inf  1.5]");
  CHECK(values(make({kNaN, kInf}, {2}, DType::Float32)) == "[nan inf]");
}

TEST_CASE("to_string float64, float16 and bfloat16", "[core][print]") {
  CHECK(values(make({0.1 + 0.2, 1.0 / 3, 2.0 / 3}, {3}, DType::Float64)) == "[0.3        0.33333333 0.66666667]");
  CHECK(values(make({1e100, 1, -2.5e-3}, {3}, DType::Float64)) == "[ 1.0e+100  1.0e+000 -2.5e-003]");
  // float16 digits are the shortest that identify the float16 value.
  CHECK(values(make({0.1, 0.5, 1.0}, {3}, DType::Float16)) == "[0.1 0.5 1. ]");
  CHECK(values(make({65504, -0.001, 3.3}, {3}, DType::Float16)) == "[ 6.55e+04 -1.00e-03  3.30e+00]");
  // Integer digits are exact in arrays (52384, not the shortest 52380).
  CHECK(values(make({52384, 1}, {2}, DType::Float16)) == "[5.238e+04 1.000e+00]");
  CHECK(values(make({52384, 100}, {2}, DType::Float16)) == "[52384.   100.]");
  // bfloat16 is no NumPy float type: each element prints as C++ streams a float, unaligned.
  CHECK(values(make({0.1, 0.5, 1, 2.5, -3}, {5}, DType::BFloat16)) == "[0.100098 0.5 1 2.5 -3]");
}

TEST_CASE("to_string integers and bools", "[core][print]") {
  CHECK(values(Tensor::from_vector<int32_t>({1, -20, 300, 4}, {2, 2})) == "[[  1 -20] [300   4]]");
  CHECK(values(Tensor::from_vector<int64_t>({9007199254740993LL, -1})) == "[9007199254740993               -1]");
  CHECK(values(Tensor::from_vector<uint8_t>({0, 7, 255})) == "[  0   7 255]");
  CHECK(values(Tensor::from_vector<bool>({true, false, true})) == "[ True False  True]");
  CHECK(values(Tensor::from_vector<bool>({true, true, true, true}, {2, 2})) == "[[ True  True] [ True  True]]");
}

TEST_CASE("to_string 0-d tensors print NumPy's scalar str", "[core][print]") {
  CHECK(values(Tensor::scalar<float>(3.0f)) == "3.0");
  CHECK(values(Tensor::scalar<float>(0.1f)) == "0.1");
  CHECK(values(Tensor::scalar<float>(1e20f)) == "1e+20");
  CHECK(values(Tensor::scalar<float>(1.5e-5f)) == "1.5e-05");
  CHECK(values(Tensor::scalar<float>(-0.0f)) == "-0.0");
  CHECK(values(Tensor::scalar<float>(std::numeric_limits<float>::quiet_NaN())) == "nan");
  CHECK(values(Tensor::scalar<double>(1.0 / 3)) == "0.3333333333333333");
  CHECK(values(Tensor::scalar<double>(1e16)) == "1e+16");
  CHECK(values(Tensor::scalar<half>(half(0.1f))) == "0.1");
  CHECK(values(Tensor::scalar<half>(half(65504.0f))) == "65500.0");
  CHECK(values(Tensor::scalar<bfloat16>(bfloat16(3.0f))) == "3");
  CHECK(values(Tensor::scalar<int32_t>(-7)) == "-7");
  CHECK(values(Tensor::scalar<bool>(true)) == "True");
}

TEST_CASE("to_string empty and 3-d tensors", "[core][print]") {
  CHECK(Tensor::empty({0, 3}, DType::Float32).to_string() ==
        "ember.Tensor([], shape=(0, 3), dtype=float32, device=cpu:0)");
  CHECK(values(Tensor::empty({3, 0}, DType::Int32)) == "[]");
  Tensor t = iota(24, DType::Int32).view({2, 3, 4});
  CHECK(values(t) == "[[[ 0  1  2  3] [ 4  5  6  7] [ 8  9 10 11]] [[12 13 14 15] [16 17 18 19] [20 21 22 23]]]");
}

TEST_CASE("to_string wraps rows at 75 columns as NumPy does", "[core][print]") {
  // A wrapped line loses its trailing padding ("-1.  1.25" where one line would give "-1.    1.25").
  Tensor t = make({0, 1, 1.75, -2, -1.5, 1.25, 1.75, -1.25, -1, 1.25, -0.5, -1, 1.25, -1, -0.5, 0.5, 0, -1.75, -2, 1.25},
                  {20}, DType::Float32);
  CHECK(values(t) ==
        "[ 0.    1.    1.75 -2.   -1.5   1.25  1.75 -1.25 -1.    1.25 -0.5  -1.  1.25 -1.   -0.5   0.5   0.   -1.75 "
        "-2.    1.25]");
}

TEST_CASE("to_string summarises more than 1000 elements", "[core][print]") {
  CHECK(values(iota(2000, DType::Int32)) == "[   0    1    2 ... 1997 1998 1999]");
  // The layout is fitted to the edge items only (500 is the largest shown, not 1000).
  std::vector<double> halves(1001);
  for (size_t i = 0; i < halves.size(); ++i) halves[i] = 0.5 * static_cast<double>(i);
  CHECK(values(make(halves, {1001}, DType::Float16)) == "[  0.    0.5   1.  ... 499.  499.5 500. ]");
  CHECK(values(iota(2000, DType::Float32).view({40, 50})) ==
        "[[0.000e+00 1.000e+00 2.000e+00 ... 4.700e+01 4.800e+01 4.900e+01] "
        "[5.000e+01 5.100e+01 5.200e+01 ... 9.700e+01 9.800e+01 9.900e+01] "
        "[1.000e+02 1.010e+02 1.020e+02 ... 1.470e+02 1.480e+02 1.490e+02] ... "
        "[1.850e+03 1.851e+03 1.852e+03 ... 1.897e+03 1.898e+03 1.899e+03] "
        "[1.900e+03 1.901e+03 1.902e+03 ... 1.947e+03 1.948e+03 1.949e+03] "
        "[1.950e+03 1.951e+03 1.952e+03 ... 1.997e+03 1.998e+03 1.999e+03]]");
  std::string three_d = values(iota(2000, DType::Int64).view({10, 10, 20}));
  CHECK(three_d.rfind("[[[   0    1    2 ...   17   18   19] [  20   21   22 ...   37   38   39] "
                      "[  40   41   42 ...   57   58   59] ... [ 140  141  142 ...  157  158  159]",
                      0) == 0);
  CHECK(three_d.find("[ 580  581  582 ...  597  598  599]] ... [[1400 1401 1402 ... 1417 1418 1419]") !=
        std::string::npos);
  CHECK(three_d.size() == 1337);
}
