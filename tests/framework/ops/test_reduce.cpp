// Reductions: hand-computed values per dtype, axes handling, empty tensors, errors, accuracy, and a
// brute-force cross-check of the staged engine on many shapes and axis sets.
#include <cmath>
#include <limits>
#include <random>

#include "tests/support/tensor_testing.h"

using namespace ember;
using ember::testing::check_tensor;
using ember::testing::make;
using ember::testing::tolerance_for;

namespace {

const std::vector<DType> kNumeric = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16,
                                     DType::Int32,   DType::Int64,   DType::UInt8};
const std::vector<DType> kFloats = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16};
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

ops::Axes no_axes() { return ops::Axes(std::vector<int64_t>{}); }

// 0, 1, ..., n-1 shaped as `shape`.
Tensor iota(const Shape& shape, DType dtype) {
  std::vector<double> v(static_cast<size_t>(shape.num_elements()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  return make(v, shape, dtype);
}

}  // namespace

TEST_CASE("reduce_sum over all, single and negative axes, keepdims, every numeric dtype", "[ops][reduce]") {
  for (DType t : kNumeric) {
    INFO("dtype " << t);
    Tensor x = make({1, 2, 3, 4, 5, 6}, {2, 3}, t);
    double tol = tolerance_for(t);
    check_tensor(ops::reduce_sum(x), t, {}, {21}, tol);
    check_tensor(ops::reduce_sum(x, 0), t, {3}, {5, 7, 9}, tol);
    check_tensor(ops::reduce_sum(x, 1), t, {2}, {6, 15}, tol);
    check_tensor(ops::reduce_sum(x, -1, true), t, {2, 1}, {6, 15}, tol);
    check_tensor(ops::reduce_sum(x, -2, true), t, {1, 3}, {5, 7, 9}, tol);
    check_tensor(ops::reduce_sum(x, {}, true), t, {1, 1}, {21}, tol);
    check_tensor(ops::reduce_sum(x, {1, 0}), t, {}, {21}, tol);
    check_tensor(ops::reduce_sum(x, no_axes()), t, {2, 3}, {1, 2, 3, 4, 5, 6}, tol);
    check_tensor(ops::reduce_sum(x, no_axes(), true), t, {2, 3}, {1, 2, 3, 4, 5, 6}, tol);
  }
}

TEST_CASE("reduce_mean: floats exact, integers truncate toward zero", "[ops][reduce]") {
  for (DType t : kFloats) {
    INFO("dtype " << t);
    Tensor x = make({1, 2, 3, 4, 5, 6}, {2, 3}, t);
    check_tensor(ops::reduce_mean(x), t, {}, {3.5}, tolerance_for(t));
    check_tensor(ops::reduce_mean(x, 0), t, {3}, {2.5, 3.5, 4.5}, tolerance_for(t));
    check_tensor(ops::reduce_mean(x, -1, true), t, {2, 1}, {2, 5}, tolerance_for(t));
  }
  for (DType t : {DType::Int32, DType::Int64, DType::UInt8}) {
    INFO("dtype " << t);
    Tensor x = make({1, 2, 3, 4, 5, 6}, {2, 3}, t);
    check_tensor(ops::reduce_mean(x), t, {}, {3});
    check_tensor(ops::reduce_mean(x, 0), t, {3}, {2, 3, 4});
  }
  // TF divides the 64-bit total: -3 / 2 = -1, and 200 + 200 does not wrap in uint8 before dividing.
  check_tensor(ops::reduce_mean(make({-1, -2}, {2}, DType::Int32)), DType::Int32, {}, {-1});
  check_tensor(ops::reduce_mean(make({200, 200}, {2}, DType::UInt8)), DType::UInt8, {}, {200});
  // sum of uint8 wraps, as TF's does: 400 mod 256 = 144.
  check_tensor(ops::reduce_sum(make({200, 200}, {2}, DType::UInt8)), DType::UInt8, {}, {144});
}

TEST_CASE("reduce_max, reduce_min, reduce_prod per dtype", "[ops][reduce]") {
  for (DType t : kNumeric) {
    INFO("dtype " << t);
    Tensor x = make({3, 1, 4, 1, 5, 2}, {2, 3}, t);
    double tol = tolerance_for(t);
    check_tensor(ops::reduce_max(x), t, {}, {5}, tol);
    check_tensor(ops::reduce_max(x, 0), t, {3}, {3, 5, 4}, tol);
    check_tensor(ops::reduce_max(x, -1, true), t, {2, 1}, {4, 5}, tol);
    check_tensor(ops::reduce_min(x), t, {}, {1}, tol);
    check_tensor(ops::reduce_min(x, 0), t, {3}, {1, 1, 2}, tol);
    check_tensor(ops::reduce_min(x, 1), t, {2}, {1, 1}, tol);
    check_tensor(ops::reduce_prod(x), t, {}, {120}, tol);
    check_tensor(ops::reduce_prod(x, 0), t, {3}, {3, 5, 8}, tol);
    check_tensor(ops::reduce_prod(x, 1, true), t, {2, 1}, {12, 10}, tol);
  }
  Tensor neg = make({-3, -1, -7}, {3}, DType::Int32);
  check_tensor(ops::reduce_max(neg), DType::Int32, {}, {-1});
  check_tensor(ops::reduce_min(neg), DType::Int32, {}, {-7});
  check_tensor(ops::reduce_prod(neg), DType::Int32, {}, {-21});
}

TEST_CASE("reduce_max and reduce_min propagate NaN", "[ops][reduce]") {
  Tensor x = make({1, kNaN, 3, 4, 5, 6}, {2, 3}, DType::Float32);
  check_tensor(ops::reduce_max(x), DType::Float32, {}, {kNaN});
  check_tensor(ops::reduce_min(x, 0), DType::Float32, {3}, {1, kNaN, 3});
  check_tensor(ops::reduce_max(x, 1), DType::Float32, {2}, {kNaN, 6});
}

TEST_CASE("reduce_all and reduce_any on bool", "[ops][reduce]") {
  Tensor x = make({1, 0, 1, 1, 1, 1}, {2, 3}, DType::Bool);
  check_tensor(ops::reduce_all(x), DType::Bool, {}, {0});
  check_tensor(ops::reduce_any(x), DType::Bool, {}, {1});
  check_tensor(ops::reduce_all(x, 0), DType::Bool, {3}, {1, 0, 1});
  check_tensor(ops::reduce_all(x, -1, true), DType::Bool, {2, 1}, {0, 1});
  Tensor z = make({0, 0, 0, 1, 0, 0}, {2, 3}, DType::Bool);
  check_tensor(ops::reduce_any(z, 1), DType::Bool, {2}, {0, 1});
  check_tensor(ops::reduce_any(z, 0), DType::Bool, {3}, {1, 0, 0});
}

TEST_CASE("non-contiguous axes: {0, 2} of a (2, 3, 4) tensor", "[ops][reduce]") {
  for (DType t : {DType::Float32, DType::Float64, DType::Int32, DType::Int64}) {
    INFO("dtype " << t);
    Tensor x = iota({2, 3, 4}, t);  // x[i][j][k] = 12i + 4j + k
    check_tensor(ops::reduce_sum(x, {0, 2}), t, {3}, {60, 92, 124});
    check_tensor(ops::reduce_sum(x, {2, -3}, true), t, {1, 3, 1}, {60, 92, 124});
    check_tensor(ops::reduce_max(x, {0, 2}), t, {3}, {15, 19, 23});
    check_tensor(ops::reduce_min(x, {0, 2}), t, {3}, {0, 4, 8});
  }
  Tensor xf = iota({2, 3, 4}, DType::Float32);
  check_tensor(ops::reduce_mean(xf, {0, 2}), DType::Float32, {3}, {7.5, 11.5, 15.5});
  check_tensor(ops::reduce_prod(make({1, 2, 3, 4}, {2, 1, 2}, DType::Int64), {0, 2}), DType::Int64, {1}, {24});
  // (2, 2, 2, 2) holding 8i + 4j + 2k + l: over {0, 2} the sums are 16j + 4l + 20, over {1, 3} 32i + 8k + 10.
  Tensor y = iota({2, 2, 2, 2}, DType::Float64);
  check_tensor(ops::reduce_sum(y, {0, 2}), DType::Float64, {2, 2}, {20, 24, 36, 40});
  check_tensor(ops::reduce_sum(y, {1, 3}, true), DType::Float64, {2, 1, 2, 1}, {10, 18, 42, 50});
}

TEST_CASE("reductions of empty tensors give TF's identities", "[ops][reduce]") {
  for (DType t : kNumeric) {
    INFO("dtype " << t);
    Tensor e = Tensor::empty({0, 3}, t);
    const bool fl = is_floating(t);
    check_tensor(ops::reduce_sum(e, 0), t, {3}, {0, 0, 0});
    check_tensor(ops::reduce_sum(e), t, {}, {0});
    check_tensor(ops::reduce_prod(e, 0), t, {3}, {1, 1, 1});
    check_tensor(ops::reduce_sum(e, 1), t, {0}, {});
    check_tensor(ops::reduce_max(e, 1, true), t, {0, 1}, {});
    double lowest = t == DType::Int32 ? -2147483648.0 : t == DType::Int64 ? -9223372036854775808.0 : 0.0;
    double highest = t == DType::Int32 ? 2147483647.0 : t == DType::Int64 ? 9223372036854775807.0 : 255.0;
    check_tensor(ops::reduce_max(e, 0), t, {3}, std::vector<double>(3, fl ? -kInf : lowest), 0, 0);
    check_tensor(ops::reduce_min(e, 0), t, {3}, std::vector<double>(3, fl ? kInf : highest), 0, 0);
    if (fl) {
      check_tensor(ops::reduce_mean(e, 0), t, {3}, {kNaN, kNaN, kNaN});
    } else {
      REQUIRE_THROWS_AS(ops::reduce_mean(e, 0), InvalidArgument);
      REQUIRE_THROWS_WITH(ops::reduce_mean(e), Catch::Contains("reduce_mean"));
      check_tensor(ops::reduce_mean(e, 1), t, {0}, {});  // nothing is divided
    }
  }
  Tensor b = Tensor::empty({0}, DType::Bool);
  check_tensor(ops::reduce_all(b), DType::Bool, {}, {1});
  check_tensor(ops::reduce_any(b), DType::Bool, {}, {0});
}

TEST_CASE("reductions of scalars and size-1 dimensions", "[ops][reduce]") {
  Tensor s = Tensor::scalar<float>(2.5f);
  check_tensor(ops::reduce_sum(s), DType::Float32, {}, {2.5});
  check_tensor(ops::reduce_max(s, {}, true), DType::Float32, {}, {2.5});
  Tensor x = make({1, 2, 3}, {1, 3, 1}, DType::Int32);
  check_tensor(ops::reduce_sum(x, {0, 2}), DType::Int32, {3}, {1, 2, 3});
  check_tensor(ops::reduce_sum(x, {0, 1}), DType::Int32, {1}, {6});
}

TEST_CASE("reduction errors name the op", "[ops][reduce]") {
  Tensor x = make({1, 2, 3, 4, 5, 6}, {2, 3}, DType::Float32);
  REQUIRE_THROWS_AS(ops::reduce_sum(x, 2), InvalidArgument);
  REQUIRE_THROWS_WITH(ops::reduce_sum(x, 2), Catch::Contains("reduce_sum") && Catch::Contains("axis 2") &&
                                                 Catch::Contains("rank 2"));
  REQUIRE_THROWS_WITH(ops::reduce_max(x, -3), Catch::Contains("reduce_max") && Catch::Contains("axis -3"));
  REQUIRE_THROWS_AS(ops::reduce_mean(x, {0, -2}), InvalidArgument);
  REQUIRE_THROWS_WITH(ops::reduce_mean(x, {0, -2}), Catch::Contains("reduce_mean") && Catch::Contains("once"));
  REQUIRE_THROWS_AS(ops::reduce_sum(Tensor::scalar<float>(1), 0), InvalidArgument);
  Tensor b = make({1, 0}, {2}, DType::Bool);
  REQUIRE_THROWS_AS(ops::reduce_sum(b), InvalidArgument);
  REQUIRE_THROWS_WITH(ops::reduce_prod(b), Catch::Contains("reduce_prod") && Catch::Contains("bool"));
  REQUIRE_THROWS_AS(ops::reduce_all(x), InvalidArgument);
  REQUIRE_THROWS_WITH(ops::reduce_any(x), Catch::Contains("reduce_any") && Catch::Contains("float32"));
  REQUIRE_THROWS_WITH(ops::reduce_all(b, 1), Catch::Contains("reduce_all"));
  REQUIRE_THROWS_AS(ops::reduce_sum(Tensor()), InvalidArgument);
}

TEST_CASE("argmax and argmin: first index on ties, NaN wins, output types", "[ops][reduce]") {
  for (DType t : kNumeric) {
    INFO("dtype " << t);
    Tensor x = make({1, 3, 3, 5, 2, 5}, {2, 3}, t);
    check_tensor(ops::argmax(x, 1), DType::Int64, {2}, {1, 0});
    check_tensor(ops::argmax(x, -1, DType::Int32), DType::Int32, {2}, {1, 0});
    check_tensor(ops::argmax(x), DType::Int64, {3}, {1, 0, 1});
    check_tensor(ops::argmin(x, 1), DType::Int64, {2}, {0, 1});
    check_tensor(ops::argmin(x, 0, DType::Int32), DType::Int32, {3}, {0, 1, 0});
    Tensor ties = make({7, 7, 7, 7}, {4}, t);
    check_tensor(ops::argmax(ties), DType::Int64, {}, {0});
    check_tensor(ops::argmin(ties), DType::Int64, {}, {0});
  }
  Tensor n = make({1, kNaN, 3, kNaN}, {4}, DType::Float32);
  check_tensor(ops::argmax(n), DType::Int64, {}, {1});
  check_tensor(ops::argmin(n), DType::Int64, {}, {1});
  // A middle axis with a wide inner extent (the column path, several chunks of columns).
  Tensor w = iota({2, 3, 300}, DType::Float32);
  std::vector<double> twos(600, 2.0), zeros(600, 0.0);
  check_tensor(ops::argmax(w, 1), DType::Int64, {2, 300}, twos);
  check_tensor(ops::argmin(w, -2), DType::Int64, {2, 300}, zeros);
  check_tensor(ops::argmax(Tensor::empty({0, 3}, DType::Float32), 1), DType::Int64, {0}, {});
}

TEST_CASE("argmax errors name the op", "[ops][reduce]") {
  Tensor x = make({1, 2, 3, 4}, {2, 2}, DType::Float32);
  REQUIRE_THROWS_AS(ops::argmax(x, 0, DType::Float32), InvalidArgument);
  REQUIRE_THROWS_WITH(ops::argmax(x, 0, DType::UInt8), Catch::Contains("argmax") && Catch::Contains("output_type"));
  REQUIRE_THROWS_WITH(ops::argmin(x, 2), Catch::Contains("argmin") && Catch::Contains("axis 2"));
  REQUIRE_THROWS_AS(ops::argmax(Tensor::scalar<float>(1)), InvalidArgument);
  REQUIRE_THROWS_WITH(ops::argmax(Tensor::empty({3, 0}, DType::Float32), 1),
                      Catch::Contains("argmax") && Catch::Contains("empty"));
  REQUIRE_THROWS_WITH(ops::argmin(make({1, 0}, {2}, DType::Bool)), Catch::Contains("argmin") && Catch::Contains("bool"));
}

TEST_CASE("large float32 sums stay accurate", "[ops][reduce]") {
  // A serial float sum of 10 million 0.1f ends near 1087937; the exact total is 1000000.0149, and a
  // pairwise sum stays within ~1e-6 relative (identical inputs make each level's rounding agree).
  Tensor x = ops::full({10000000}, 0.1);
  double s = ops::reduce_sum(x).item<float>();
  CHECK(std::abs(s - 1000000.0149) < 1.0);
  check_tensor(ops::reduce_mean(x), DType::Float32, {}, {0.1}, 1e-6);
  // Columns: 2.5 million rows of 4 columns each (the column path, split across threads).
  Tensor c = ops::full({2500000, 4}, 0.1);
  check_tensor(ops::reduce_sum(c, 0), DType::Float32, {4}, std::vector<double>(4, 250000.0037), 1e-6);
  // Rows: 4 rows of 2.5 million (few long rows, split across threads).
  check_tensor(ops::reduce_sum(ops::full({4, 2500000}, 0.1), 1), DType::Float32, {4},
               std::vector<double>(4, 250000.0037), 1e-6);
  // float16 accumulates in float: 4096 ones is exact, where a half running sum stops at 2048.
  check_tensor(ops::reduce_sum(ops::ones({4096}, DType::Float16)), DType::Float16, {}, {4096}, 0, 0);
  check_tensor(ops::reduce_sum(ops::ones({300, 4096}, DType::BFloat16), 1), DType::BFloat16, {300},
               std::vector<double>(300, 4096), 0, 0);
}

TEST_CASE("staged reduction matches a brute-force reference on many shapes", "[ops][reduce]") {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> dist(-1, 1);
  const std::vector<Shape> shapes = {{5},         {7, 3},        {3, 1, 4},   {2, 3, 4, 5}, {4, 1, 3, 2, 3},
                                     {130, 70},   {3, 2000},     {2000, 3},   {9, 300, 5},  {40, 1, 33, 2},
                                     {1, 70000},  {70000, 2},    {3, 5, 9000}};
  for (const Shape& shape : shapes) {
    const int64_t rank = shape.rank(), n = shape.num_elements();
    std::vector<double> v(static_cast<size_t>(n));
    for (double& e : v) e = std::round(dist(rng) * 64) / 64;  // exact in float32 sums of this size
    Tensor x = make(v, shape, DType::Float64);
    Tensor x32 = make(v, shape, DType::Float32);
    for (int64_t mask = 1; mask < (int64_t{1} << rank); ++mask) {
      std::vector<int64_t> axes;
      for (int64_t d = 0; d < rank; ++d)
        if (mask & (int64_t{1} << d)) axes.push_back(d);
      // Reference: out index from the kept coordinates.
      Shape out_shape;
      for (int64_t d = 0; d < rank; ++d)
        if (!(mask & (int64_t{1} << d))) out_shape.push_back(shape[d]);
      std::vector<double> sum(static_cast<size_t>(out_shape.num_elements()), 0.0);
      std::vector<double> mx(sum.size(), -kInf);
      std::vector<int64_t> strides = shape.strides();
      for (int64_t i = 0; i < n; ++i) {
        int64_t o = 0, rem = i;
        for (int64_t d = 0; d < rank; ++d) {
          int64_t c = rem / strides[static_cast<size_t>(d)];
          rem %= strides[static_cast<size_t>(d)];
          if (!(mask & (int64_t{1} << d))) o = o * shape[d] + c;
        }
        sum[static_cast<size_t>(o)] += v[static_cast<size_t>(i)];
        mx[static_cast<size_t>(o)] = std::max(mx[static_cast<size_t>(o)], v[static_cast<size_t>(i)]);
      }
      INFO("shape " << shape << ", axes mask " << mask);
      check_tensor(ops::reduce_sum(x, axes), DType::Float64, out_shape, sum, 1e-12, 1e-9);
      check_tensor(ops::reduce_max(x, axes), DType::Float64, out_shape, mx, 0, 0);
      check_tensor(ops::reduce_sum(x32, axes), DType::Float32, out_shape, sum, 1e-6, 1e-4);
    }
  }
}

TEST_CASE("reduce_logsumexp is stable and handles -inf", "[ops][reduce][composite]") {
  for (DType t : kFloats) {
    INFO("dtype " << t);
    Tensor x = make({1, 2, 3, 4}, {2, 2}, t);
    double tol = std::max(tolerance_for(t), 1e-12) * 4;
    check_tensor(ops::reduce_logsumexp(x, 1), t, {2}, {2.313261687518223, 4.313261687518223}, tol, tol);
    check_tensor(ops::reduce_logsumexp(x, -2, true), t, {1, 2}, {3.1269280110429727, 4.1269280110429727}, tol, tol);
    check_tensor(ops::reduce_logsumexp(x), t, {}, {4.440189698561196}, tol, tol);
  }
  Tensor big = make({1000, 1000, -kInf, -kInf}, {2, 2}, DType::Float32);
  check_tensor(ops::reduce_logsumexp(big, 1), DType::Float32, {2}, {1000.6931471805599, -kInf}, 1e-6);
  check_tensor(ops::reduce_logsumexp(Tensor::empty({0, 2}, DType::Float32), 0), DType::Float32, {2}, {-kInf, -kInf});
  REQUIRE_THROWS_WITH(ops::reduce_logsumexp(make({1, 2}, {2}, DType::Int32)), Catch::Contains("reduce_logsumexp"));
  REQUIRE_THROWS_WITH(ops::reduce_logsumexp(big, 2), Catch::Contains("reduce_logsumexp"));
}

TEST_CASE("reduce_variance and reduce_std are population statistics", "[ops][reduce][composite]") {
  for (DType t : kFloats) {
    INFO("dtype " << t);
    Tensor x = make({1, 2, 3, 4}, {2, 2}, t);
    double tol = tolerance_for(t);
    check_tensor(ops::reduce_variance(x), t, {}, {1.25}, tol);
    check_tensor(ops::reduce_variance(x, 0), t, {2}, {1, 1}, tol);
    check_tensor(ops::reduce_variance(x, -1, true), t, {2, 1}, {0.25, 0.25}, tol);
    check_tensor(ops::reduce_std(x), t, {}, {1.118033988749895}, tol);
    check_tensor(ops::reduce_std(x, 1), t, {2}, {0.5, 0.5}, tol);
  }
  check_tensor(ops::reduce_variance(Tensor::empty({0}, DType::Float32)), DType::Float32, {}, {kNaN});
  REQUIRE_THROWS_WITH(ops::reduce_variance(make({1, 2}, {2}, DType::Int32)), Catch::Contains("reduce_variance"));
  REQUIRE_THROWS_WITH(ops::reduce_std(make({1, 2}, {2}, DType::Float32), {0, 0}), Catch::Contains("reduce_std"));
}
