// Creation ops: fill family, range, linspace and eye against hand-computed values, per dtype.
#include <algorithm>
#include <cmath>
#include <limits>

#include "tests/support/tensor_testing.h"

using namespace ember;
using ember::testing::check_tensor;
using ember::testing::make;
using ember::testing::tolerance_for;

namespace {
const std::vector<DType> kAll = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16,
                                 DType::Int32,   DType::Int64,   DType::UInt8,   DType::Bool};
const std::vector<DType> kFloats = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16};
}  // namespace

TEST_CASE("zeros, ones and full for every dtype", "[ops][creation]") {
  for (DType t : kAll) {
    INFO("dtype " << t);
    check_tensor(ops::zeros({2, 3}, t), t, {2, 3}, std::vector<double>(6, 0));
    check_tensor(ops::ones({3}, t), t, {3}, {1, 1, 1});
    check_tensor(ops::full({2, 2}, 7, t), t, {2, 2}, std::vector<double>(4, t == DType::Bool ? 1 : 7));
    check_tensor(ops::zeros({}, t), t, {}, {0});
    check_tensor(ops::ones({0, 4}, t), t, {0, 4}, {});
  }
  check_tensor(ops::zeros({2}), DType::Float32, {2}, {0, 0});
  check_tensor(ops::full({2}, 2.5), DType::Float32, {2}, {2.5, 2.5});
  check_tensor(ops::full({2}, -2.7, DType::Int32), DType::Int32, {2}, {-2, -2});  // truncates toward zero
  check_tensor(ops::full({1}, 0.5, DType::Bool), DType::Bool, {1}, {1});
  check_tensor(ops::full({1}, 1e6, DType::Float16), DType::Float16, {1}, {std::numeric_limits<double>::infinity()});
  // Large enough to be filled by several threads.
  std::vector<double> v = testing::values_as_double(ops::full({100003}, -3.5, DType::Float64));
  CHECK(std::all_of(v.begin(), v.end(), [](double e) { return e == -3.5; }));
}

TEST_CASE("zeros_like and ones_like keep dtype, shape and device", "[ops][creation]") {
  for (DType t : kAll) {
    INFO("dtype " << t);
    Tensor x = make({1, 2, 3, 4, 5, 6}, {3, 2}, t);
    Tensor z = ops::zeros_like(x);
    check_tensor(z, t, {3, 2}, std::vector<double>(6, 0));
    CHECK(z.device() == x.device());
    CHECK_FALSE(z.is_same(x));
    check_tensor(ops::ones_like(x), t, {3, 2}, std::vector<double>(6, 1));
    check_tensor(ops::ones_like(Tensor::empty({0}, t)), t, {0}, {});
  }
  REQUIRE_THROWS_WITH(ops::zeros_like(Tensor()), Catch::Contains("zeros_like"));
}

TEST_CASE("fill errors name the op", "[ops][creation]") {
  REQUIRE_THROWS_AS(ops::zeros({2, -1}), InvalidArgument);
  REQUIRE_THROWS_WITH(ops::zeros({2, -1}), Catch::Contains("zeros") && Catch::Contains("(2, -1)"));
  REQUIRE_THROWS_WITH(ops::ones({-3}), Catch::Contains("ones") && Catch::Contains("negative"));
  REQUIRE_THROWS_WITH(ops::full({-1, 2}, 1.0), Catch::Contains("full"));
  REQUIRE_THROWS_AS(ops::full({2}, 300, DType::UInt8), InvalidArgument);
  REQUIRE_THROWS_WITH(ops::full({2}, -1, DType::UInt8), Catch::Contains("full") && Catch::Contains("uint8"));
  REQUIRE_THROWS_WITH(ops::full({2}, 3e9, DType::Int32), Catch::Contains("full") && Catch::Contains("int32"));
  REQUIRE_THROWS_AS(ops::full({2}, std::nan(""), DType::Int64), InvalidArgument);
}

TEST_CASE("range: values, dtype inference and sizes", "[ops][creation]") {
  check_tensor(ops::range(5), DType::Int32, {5}, {0, 1, 2, 3, 4});
  check_tensor(ops::range(1, 10, 3), DType::Int32, {3}, {1, 4, 7});
  check_tensor(ops::range(10, 1, -3), DType::Int32, {3}, {10, 7, 4});
  check_tensor(ops::range(3, 3), DType::Int32, {0}, {});
  check_tensor(ops::range(2.5), DType::Float32, {3}, {0, 1, 2});
  check_tensor(ops::range(1, 2, 0.25), DType::Float32, {4}, {1, 1.25, 1.5, 1.75});
  check_tensor(ops::range(4294967296.0, 4294967299.0), DType::Int64, {3}, {4294967296.0, 4294967297.0, 4294967298.0});
  // 1 / 0.1 is exactly 10 in both float32 and float64: ten elements, the last 0.9.
  Tensor r = ops::range(0, 1, 0.1);
  check_tensor(r, DType::Float32, {10}, {0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9}, 1e-6);
  check_tensor(ops::range(0, 1, 0.1, DType::Float64), DType::Float64, {10},
               {0, 0.1, 0.2, 0.30000000000000004, 0.4, 0.5, 0.6000000000000001, 0.7000000000000001, 0.8, 0.9}, 0, 0);
  check_tensor(ops::range(0, 0.3, 0.1, DType::Float64), DType::Float64, {3}, {0, 0.1, 0.2}, 0, 1e-15);
  check_tensor(ops::range(1, 0, -0.25, DType::Float64), DType::Float64, {4}, {1, 0.75, 0.5, 0.25}, 0, 0);
  for (DType t : {DType::Int32, DType::Int64, DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    INFO("dtype " << t);
    check_tensor(ops::range(1, 4, 1, t), t, {3}, {1, 2, 3});
    check_tensor(ops::range(-2, -8, -2, t), t, {3}, {-2, -4, -6});
    check_tensor(ops::range(0, 0, 1, t), t, {0}, {});
    if (is_floating(t)) check_tensor(ops::range(0, 2, 0.5, t), t, {4}, {0, 0.5, 1, 1.5}, tolerance_for(t));
  }
  Tensor big = ops::range(0, 100000, 1, DType::Int64);
  std::vector<int64_t> bv = big.to_vector<int64_t>();
  REQUIRE(bv.size() == 100000);
  CHECK(bv[54321] == 54321);
  CHECK(bv.back() == 99999);
}

TEST_CASE("range errors name the op", "[ops][creation]") {
  REQUIRE_THROWS_AS(ops::range(0, 5, 0), InvalidArgument);
  REQUIRE_THROWS_WITH(ops::range(0, 5, 0), Catch::Contains("range: delta must not be 0"));
  REQUIRE_THROWS_WITH(ops::range(5, 1), Catch::Contains("range") && Catch::Contains("start <= limit"));
  REQUIRE_THROWS_WITH(ops::range(1, 5, -1), Catch::Contains("range") && Catch::Contains("start >= limit"));
  REQUIRE_THROWS_AS(ops::range(-3), InvalidArgument);
  REQUIRE_THROWS_WITH(ops::range(0.5, 3, 1, DType::Int32), Catch::Contains("range") && Catch::Contains("int32"));
  REQUIRE_THROWS_WITH(ops::range(0, 3, 1, DType::Bool), Catch::Contains("range") && Catch::Contains("bool"));
  REQUIRE_THROWS_AS(ops::range(0, 3, 1, DType::UInt8), InvalidArgument);
  REQUIRE_THROWS_AS(ops::range(0, 1e300, 1e-300, DType::Float64), InvalidArgument);
  REQUIRE_THROWS_AS(ops::range(0, std::nan(""), 1), InvalidArgument);
  REQUIRE_THROWS_WITH(ops::range(0, 1, 1e-10, DType::Float16), Catch::Contains("delta must not be 0"));
}

TEST_CASE("linspace: evenly spaced, last element exactly stop", "[ops][creation]") {
  for (DType t : kFloats) {
    INFO("dtype " << t);
    check_tensor(ops::linspace(0, 1, 5, t), t, {5}, {0, 0.25, 0.5, 0.75, 1}, tolerance_for(t));
    check_tensor(ops::linspace(5, 1, 3, t), t, {3}, {5, 3, 1}, tolerance_for(t));
    check_tensor(ops::linspace(3, 7, 1, t), t, {1}, {3}, tolerance_for(t));
    check_tensor(ops::linspace(-1, 1, 2, t), t, {2}, {-1, 1}, tolerance_for(t));
  }
  check_tensor(ops::linspace(0, 1, 5), DType::Float32, {5}, {0, 0.25, 0.5, 0.75, 1});
  std::vector<float> f = ops::linspace(0.1, 0.7, 7).to_vector<float>();
  CHECK(f.back() == 0.7f);
  CHECK(f[0] == 0.1f);
  CHECK(std::abs(f[3] - 0.4f) < 1e-7f);
  std::vector<double> d = ops::linspace(0, 0.3, 100001, DType::Float64).to_vector<double>();
  CHECK(d.back() == 0.3);
  CHECK(std::abs(d[50000] - 0.15) < 1e-15);
}

TEST_CASE("linspace errors name the op", "[ops][creation]") {
  REQUIRE_THROWS_AS(ops::linspace(0, 1, 0), InvalidArgument);
  REQUIRE_THROWS_WITH(ops::linspace(0, 1, -2), Catch::Contains("linspace") && Catch::Contains("num"));
  REQUIRE_THROWS_WITH(ops::linspace(0, 1, 3, DType::Int32), Catch::Contains("linspace") && Catch::Contains("int32"));
  REQUIRE_THROWS_AS(ops::linspace(0, INFINITY, 3), InvalidArgument);
}

TEST_CASE("eye: square, rectangular, empty, every dtype", "[ops][creation]") {
  for (DType t : kAll) {
    INFO("dtype " << t);
    check_tensor(ops::eye(3, -1, t), t, {3, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1});
  }
  check_tensor(ops::eye(2), DType::Float32, {2, 2}, {1, 0, 0, 1});
  check_tensor(ops::eye(2, 3), DType::Float32, {2, 3}, {1, 0, 0, 0, 1, 0});
  check_tensor(ops::eye(3, 2, DType::Int32), DType::Int32, {3, 2}, {1, 0, 0, 1, 0, 0});
  check_tensor(ops::eye(0), DType::Float32, {0, 0}, {});
  check_tensor(ops::eye(2, 0), DType::Float32, {2, 0}, {});
  REQUIRE_THROWS_AS(ops::eye(-1), InvalidArgument);
  REQUIRE_THROWS_WITH(ops::eye(-2, 3), Catch::Contains("eye"));
}
