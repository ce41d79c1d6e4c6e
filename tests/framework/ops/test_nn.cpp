// softmax / log_softmax: stability with large logits, every axis and dtype, empty tensors, errors.
// (conv2d and pooling are in test_conv.cpp and test_pool.cpp.)
#include <cmath>
#include <random>

#include "tests/support/tensor_testing.h"

using namespace ember;
using ember::testing::check_tensor;
using ember::testing::make;
using ember::testing::tolerance_for;
using ember::testing::values_as_double;
using ember::testing::kFloatDTypes;

namespace {

// softmax([0, 1, 2]) and log_softmax([0, 1, 2]).
const std::vector<double> kSoft012 = {0.09003057317038046, 0.24472847105479767, 0.6652409557748219};
const std::vector<double> kLogSoft012 = {-2.4076059644443806, -1.4076059644443806, -0.40760596444438056};

}  // namespace

TEST_CASE("softmax of large logits stays finite", "[ops][nn][softmax]") {
  for (DType dt : {DType::Float32, DType::Float64}) {
    INFO("dtype " << dt);
    double tol = tolerance_for(dt);
    Tensor x = make({1000, 1001, -1000, -1001}, {2, 2}, dt);
    check_tensor(ops::softmax(x), dt, {2, 2},
                 {0.2689414213699951, 0.7310585786300049, 0.7310585786300049, 0.2689414213699951}, tol, tol);
    check_tensor(ops::log_softmax(x), dt, {2, 2},
                 {-1.3132616875182228, -0.31326168751822286, -0.31326168751822286, -1.3132616875182228}, tol, tol);
  }
}

TEST_CASE("softmax and log_softmax values for every dtype", "[ops][nn][softmax]") {
  for (DType dt : kFloatDTypes) {
    INFO("dtype " << dt);
    double tol = tolerance_for(dt);
    Tensor x = make({0, 1, 2, 10, 11, 12}, {2, 3}, dt);
    std::vector<double> soft = kSoft012, logsoft = kLogSoft012;
    soft.insert(soft.end(), kSoft012.begin(), kSoft012.end());
    logsoft.insert(logsoft.end(), kLogSoft012.begin(), kLogSoft012.end());
    check_tensor(ops::softmax(x), dt, {2, 3}, soft, tol, tol);
    check_tensor(ops::softmax(x, 1), dt, {2, 3}, soft, tol, tol);
    check_tensor(ops::log_softmax(x, -1), dt, {2, 3}, logsoft, tol, 4 * tol);
    // Axis 0 (strided rows): each column is softmax([a, a + 10]).
    double p = 1 / (1 + std::exp(10.0));
    check_tensor(ops::softmax(x, 0), dt, {2, 3}, {p, p, p, 1 - p, 1 - p, 1 - p}, tol, tol);
    check_tensor(ops::softmax(x, -2), dt, {2, 3}, {p, p, p, 1 - p, 1 - p, 1 - p}, tol, tol);
    double lp = -std::log1p(std::exp(10.0));
    check_tensor(ops::log_softmax(x, 0), dt, {2, 3}, {lp, lp, lp, lp + 10, lp + 10, lp + 10}, tol, 4 * tol);
    check_tensor(ops::softmax(make({3}, {1}, dt)), dt, {1}, {1}, tol, tol);
  }
}

TEST_CASE("softmax over a middle axis with many inner columns", "[ops][nn][softmax]") {
  // x[o][k][j] = k + 50 j + 100 o: every (o, j) row along axis 1 is [0, 1, 2] shifted, so its softmax is kSoft012.
  // 1100 inner columns span two blocks of the strided kernel (at most 1024 wide).
  for (DType dt : {DType::Float32, DType::Float64}) {
    std::vector<double> v;
    std::vector<double> soft, logsoft;
    for (int o = 0; o < 2; ++o)
      for (int k = 0; k < 3; ++k)
        for (int j = 0; j < 1100; ++j) {
          v.push_back(k + 50.0 * j + 100.0 * o);
          soft.push_back(kSoft012[static_cast<size_t>(k)]);
          logsoft.push_back(kLogSoft012[static_cast<size_t>(k)]);
        }
    Tensor x = make(v, {2, 3, 1100}, dt);
    check_tensor(ops::softmax(x, 1), dt, {2, 3, 1100}, soft, 1e-5, 1e-6);
    check_tensor(ops::log_softmax(x, -2), dt, {2, 3, 1100}, logsoft, 1e-5, 1e-5);
  }
}

TEST_CASE("softmax on large random input matches a float64 computation", "[ops][nn][softmax]") {
  const int64_t rows = 1000, n = 100;
  std::mt19937 gen(3);
  std::normal_distribution<double> d(0, 5);
  std::vector<double> v(static_cast<size_t>(rows * n));
  for (double& x : v) x = d(gen);
  std::vector<double> want(v.size()), want_log(v.size());
  for (int64_t r = 0; r < rows; ++r) {
    double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < n; ++j) m = std::max(m, v[static_cast<size_t>(r * n + j)]);
    for (int64_t j = 0; j < n; ++j) s += std::exp(v[static_cast<size_t>(r * n + j)] - m);
    for (int64_t j = 0; j < n; ++j) {
      size_t i = static_cast<size_t>(r * n + j);
      want[i] = std::exp(v[i] - m) / s;
      want_log[i] = v[i] - m - std::log(s);
    }
  }
  Tensor x = make(v, {rows, n}, DType::Float32);
  check_tensor(ops::softmax(x), DType::Float32, {rows, n}, want, 1e-5, 1e-7);
  check_tensor(ops::log_softmax(x), DType::Float32, {rows, n}, want_log, 1e-5, 1e-5);
  // Rows sum to one.
  std::vector<double> got = values_as_double(ops::softmax(x));
  for (int64_t r = 0; r < rows; r += 97) {
    double s = 0;
    for (int64_t j = 0; j < n; ++j) s += got[static_cast<size_t>(r * n + j)];
    CHECK(std::abs(s - 1) < 1e-5);
  }
}

TEST_CASE("softmax on empty tensors", "[ops][nn][softmax]") {
  for (DType dt : kFloatDTypes) {
    INFO("dtype " << dt);
    check_tensor(ops::softmax(make({}, {2, 0}, dt)), dt, {2, 0}, {});
    check_tensor(ops::softmax(make({}, {0, 3}, dt)), dt, {0, 3}, {});
    check_tensor(ops::log_softmax(make({}, {3, 0, 2}, dt), 1), dt, {3, 0, 2}, {});
  }
}

TEST_CASE("softmax errors name the op", "[ops][nn][softmax]") {
  using Catch::Contains;
  Tensor xi = make({1, 2}, {2}, DType::Int32);
  REQUIRE_THROWS_AS(ops::softmax(xi), InvalidArgument);
  REQUIRE_THROWS_WITH(ops::softmax(xi), Contains("softmax") && Contains("int32"));
  REQUIRE_THROWS_WITH(ops::log_softmax(xi), Contains("log_softmax") && Contains("int32"));
  Tensor x = make({1, 2, 3, 4}, {2, 2}, DType::Float32);
  REQUIRE_THROWS_AS(ops::softmax(x, 2), InvalidArgument);
  REQUIRE_THROWS_WITH(ops::softmax(x, 2), Contains("softmax") && Contains("axis"));
  REQUIRE_THROWS_WITH(ops::log_softmax(x, -3), Contains("log_softmax") && Contains("axis"));
  REQUIRE_THROWS_WITH(ops::softmax(make({1}, {}, DType::Float32)), Contains("softmax") && Contains("rank"));
}

TEST_CASE("softmax of a row holding NaN is NaN", "[ops][nn][softmax]") {
  for (DType dt : kFloatDTypes) {
    INFO("dtype " << dt);
    Tensor x = make({1, NAN, 3, 1, 2, 3}, {2, 3}, dt);
    check_tensor(ops::softmax(x), dt, {2, 3}, {NAN, NAN, NAN, kSoft012[0], kSoft012[1], kSoft012[2]}, tolerance_for(dt),
                 tolerance_for(dt));
    check_tensor(ops::log_softmax(x, 0), dt, {2, 3},
                 {-std::log1p(std::exp(0.0)), NAN, -std::log1p(std::exp(0.0)), -std::log1p(std::exp(0.0)), NAN,
                  -std::log1p(std::exp(0.0))},
                 tolerance_for(dt), tolerance_for(dt));
  }
}
