// max_pool2d / avg_pool2d and their gradients: hand cases (SAME counts, first-maximum routing), finite
// differences in float64, every dtype, empty tensors and errors.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "tests/support/tensor_testing.h"

using namespace ember;
using ember::testing::check_tensor;
using ember::testing::make;
using ember::testing::tolerance_for;
using ember::testing::values_as_double;
using ember::testing::iota;
using ember::testing::kFloatDTypes;
using ember::testing::uniform_values;
using ember::testing::dot;
using ember::testing::axpy;

namespace {

struct PoolCase {
  Shape input;
  std::array<int64_t, 2> ksize;
  ops::Pool2DOptions options;
};

}  // namespace

TEST_CASE("max_pool2d and avg_pool2d hand-computed", "[ops][nn][pool]") {
  for (DType dt : kFloatDTypes) {
    INFO("dtype " << dt);
    double tol = tolerance_for(dt);
    Tensor x = make(iota(9, 1), {1, 3, 3, 1}, dt);
    check_tensor(ops::max_pool2d(x, {2, 2}), dt, {1, 2, 2, 1}, {5, 6, 8, 9}, tol, tol);
    check_tensor(ops::avg_pool2d(x, {2, 2}), dt, {1, 2, 2, 1}, {3, 4, 6, 7}, tol, tol);
    // SAME: max ignores the padding, the average divides by the real pixels only.
    check_tensor(ops::max_pool2d(x, {2, 2}, {.padding = "SAME"}), dt, {1, 3, 3, 1}, {5, 6, 6, 8, 9, 9, 8, 9, 9}, tol,
                 tol);
    check_tensor(ops::avg_pool2d(x, {2, 2}, {.padding = "SAME"}), dt, {1, 3, 3, 1}, {3, 4, 4.5, 6, 7, 7.5, 7.5, 8.5, 9},
                 tol, tol);
    // Stride 2 SAME on 4x4 with a 3x3 window: one padding pixel, after (windows of 9, 6, 6 and 4 pixels).
    Tensor x4 = make(iota(16, 1), {1, 4, 4, 1}, dt);
    check_tensor(ops::max_pool2d(x4, {3, 3}, {.strides = {2, 2}, .padding = "SAME"}), dt, {1, 2, 2, 1},
                 {11, 12, 15, 16}, tol, tol);
    check_tensor(ops::avg_pool2d(x4, {3, 3}, {.strides = {2, 2}, .padding = "SAME"}), dt, {1, 2, 2, 1},
                 {6, 7.5, 12, 13.5}, tol, tol);
    // Channels pool independently; negative values never see a padding zero.
    Tensor xc = make({1, -1, 4, -4, 2, -2, 3, -3}, {1, 2, 2, 2}, dt);
    check_tensor(ops::max_pool2d(xc, {2, 2}), dt, {1, 1, 1, 2}, {4, -1}, tol, tol);
    check_tensor(ops::avg_pool2d(xc, {2, 2}), dt, {1, 1, 1, 2}, {2.5, -2.5}, tol, tol);
    check_tensor(ops::max_pool2d(make({-5, -3}, {1, 1, 2, 1}, dt), {3, 3}, {.padding = "SAME"}), dt, {1, 1, 2, 1},
                 {-3, -3}, tol, tol);
    // Rectangular window and strides.
    check_tensor(ops::max_pool2d(x4, {1, 2}, {.strides = {3, 2}}), dt, {1, 2, 2, 1}, {2, 4, 14, 16}, tol, tol);
  }
}

TEST_CASE("max_pool2d propagates NaN", "[ops][nn][pool]") {
  Tensor x = make({1, NAN, 3, 4}, {1, 2, 2, 1}, DType::Float32);
  check_tensor(ops::max_pool2d(x, {2, 2}), DType::Float32, {1, 1, 1, 1}, {NAN});
  check_tensor(ops::max_pool2d(x, {1, 1}), DType::Float32, {1, 2, 2, 1}, {1, NAN, 3, 4});
}

TEST_CASE("pool gradients hand-computed", "[ops][nn][pool]") {
  for (DType dt : kFloatDTypes) {
    INFO("dtype " << dt);
    double tol = tolerance_for(dt);
    // Ties: each window sends its gradient to the first maximum in row-major order.
    Tensor x = make({1, 5, 5, 2, 5, 0, 0, 0, 0}, {1, 3, 3, 1}, dt);
    Tensor y = ops::max_pool2d(x, {2, 2});
    check_tensor(y, dt, {1, 2, 2, 1}, {5, 5, 5, 5}, tol, tol);
    Tensor g = make({1, 10, 100, 1000}, {1, 2, 2, 1}, dt);
    check_tensor(ops::max_pool2d_grad(x, y, g, {2, 2}), dt, {1, 3, 3, 1}, {0, 11, 0, 0, 1100, 0, 0, 0, 0}, tol, tol);
    // SAME average: each pixel gets the sum of 1/count over the windows covering it (counts 4, 2 and 1).
    Tensor ones = make(std::vector<double>(9, 1.0), {1, 3, 3, 1}, dt);
    check_tensor(ops::avg_pool2d_grad({1, 3, 3, 1}, ones, {2, 2}, {.padding = "SAME"}), dt, {1, 3, 3, 1},
                 {0.25, 0.5, 0.75, 0.5, 1, 1.5, 0.75, 1.5, 2.25}, tol, tol);
    check_tensor(ops::avg_pool2d_grad({1, 3, 3, 1}, make({4, 8, 12, 16}, {1, 2, 2, 1}, dt), {2, 2}), dt, {1, 3, 3, 1},
                 {1, 3, 2, 4, 10, 6, 3, 7, 4}, tol, tol);
  }
}

TEST_CASE("pool gradients match float64 finite differences", "[ops][nn][pool]") {
  std::vector<PoolCase> cases = {
      {{2, 7, 6, 3}, {3, 2}, {.strides = {2, 1}, .padding = "SAME"}},
      {{1, 5, 5, 2}, {2, 2}, {.strides = {2, 2}, .padding = "VALID"}},
      {{2, 6, 7, 70}, {3, 3}, {.strides = {2, 2}, .padding = "SAME"}},  // two channel blocks
      {{1, 6, 6, 4}, {3, 3}, {.strides = {1, 1}, .padding = "VALID"}},  // overlapping windows
      {{3, 9, 8, 5}, {4, 3}, {.strides = {3, 2}, .padding = "same"}},
      {{16, 32, 32, 16}, {2, 2}, {.strides = {2, 2}, .padding = "VALID"}},  // large enough to run in parallel
      {{2, 8, 7, 3}, {2, 2}, {.strides = {3, 3}, .padding = "VALID"}},  // gaps get zeros (last: keeps the seeds above)
  };
  uint32_t seed = 7;
  const double eps = 1e-6;
  for (const PoolCase& c : cases) {
    INFO("input " << c.input << " ksize " << c.ksize[0] << "x" << c.ksize[1] << " " << c.options.padding);
    std::vector<double> xv = uniform_values(c.input.num_elements(), seed++), dv = uniform_values(c.input.num_elements(), seed++);
    Tensor x = make(xv, c.input, DType::Float64);

    Tensor ym = ops::max_pool2d(x, c.ksize, c.options);
    std::vector<double> gy = uniform_values(ym.num_elements(), seed++);
    auto max_loss = [&](const std::vector<double>& v) {
      return dot(gy, values_as_double(ops::max_pool2d(make(v, c.input, DType::Float64), c.ksize, c.options)));
    };
    std::vector<double> gx =
        values_as_double(ops::max_pool2d_grad(x, ym, make(gy, ym.shape(), DType::Float64), c.ksize, c.options));
    double fd = (max_loss(axpy(xv, eps, dv)) - max_loss(axpy(xv, -eps, dv))) / (2 * eps);
    CHECK(std::abs(fd - dot(gx, dv)) <= 1e-6 * (std::abs(fd) + 1));

    Tensor ya = ops::avg_pool2d(x, c.ksize, c.options);
    CHECK(ya.shape() == ym.shape());
    auto avg_loss = [&](const std::vector<double>& v) {
      return dot(gy, values_as_double(ops::avg_pool2d(make(v, c.input, DType::Float64), c.ksize, c.options)));
    };
    std::vector<double> ga =
        values_as_double(ops::avg_pool2d_grad(c.input, make(gy, ya.shape(), DType::Float64), c.ksize, c.options));
    double fda = (avg_loss(axpy(xv, eps, dv)) - avg_loss(axpy(xv, -eps, dv))) / (2 * eps);
    CHECK(std::abs(fda - dot(ga, dv)) <= 1e-6 * (std::abs(fda) + 1));
  }
}

TEST_CASE("2x2 max pooling and its gradient match the general loop: ties, NaN, -0", "[ops][nn][pool]") {
  // Windows of 2x2 take vector paths in float32 and bfloat16 (the forward at any stride, the gradient at stride
  // 2), float16 its widened rows; float64 takes the general loops. Values on a coarse grid (exact in every type)
  // tie often, +0 and -0 among them; NaNs sit first and later in windows; dy holds -0. 23 channels: a 16-lane
  // vector where the build has AVX-512, 4-lane vectors and single channels; 5 rows and 7 columns leave the last
  // of each outside every VALID stride-2 window, and SAME clips the windows there.
  const Shape shape{2, 5, 7, 23};
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> grid(-2, 1), pick(0, 15);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> xv(static_cast<size_t>(shape.num_elements()));
  for (double& v : xv) {
    const int p = pick(rng);
    v = p == 0 ? nan : p == 1 ? -0.0 : grid(rng);
  }
  auto same_bits = [](const std::vector<double>& a, const std::vector<double>& b) {
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      INFO("element " << i << ": " << a[i] << " and " << b[i]);
      REQUIRE((a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i]))));
      REQUIRE(std::signbit(a[i]) == std::signbit(b[i]));
    }
  };
  const Tensor x64 = make(xv, shape, DType::Float64);
  for (DType dt : {DType::Float32, DType::BFloat16, DType::Float16}) {
    INFO("dtype " << dt);
    const Tensor x = make(xv, shape, dt);
    for (int64_t stride : {1, 2})
      same_bits(values_as_double(ops::max_pool2d(x, {2, 2}, {.strides = {stride, stride}})),
                values_as_double(ops::max_pool2d(x64, {2, 2}, {.strides = {stride, stride}})));
    for (const char* padding : {"VALID", "SAME"}) {
      INFO("padding " << padding);
      const ops::Pool2DOptions o{.strides = {2, 2}, .padding = padding};
      const Tensor y64 = ops::max_pool2d(x64, {2, 2}, o), y = ops::max_pool2d(x, {2, 2}, o);
      std::vector<double> gv(static_cast<size_t>(y64.num_elements()));
      for (double& v : gv) v = pick(rng) < 4 ? -0.0 : grid(rng) + 0.5;
      same_bits(values_as_double(ops::max_pool2d_grad(x, y, make(gv, y.shape(), dt), {2, 2}, o)),
                values_as_double(ops::max_pool2d_grad(x64, y64, make(gv, y64.shape(), DType::Float64), {2, 2}, o)));
    }
  }
}

TEST_CASE("pooling on empty tensors", "[ops][nn][pool]") {
  for (DType dt : kFloatDTypes) {
    INFO("dtype " << dt);
    Tensor x0 = make({}, {0, 4, 4, 3}, dt);
    check_tensor(ops::max_pool2d(x0, {2, 2}), dt, {0, 3, 3, 3}, {});
    check_tensor(ops::avg_pool2d(x0, {2, 2}, {.padding = "SAME"}), dt, {0, 4, 4, 3}, {});
    Tensor y0 = make({}, {0, 3, 3, 3}, dt);
    check_tensor(ops::max_pool2d_grad(x0, y0, y0, {2, 2}), dt, {0, 4, 4, 3}, {});
    check_tensor(ops::avg_pool2d_grad({0, 4, 4, 3}, y0, {2, 2}), dt, {0, 4, 4, 3}, {});
    // A window larger than a VALID input leaves no outputs; its gradient is all zeros.
    Tensor x = make(iota(4, 1), {1, 2, 2, 1}, dt);
    check_tensor(ops::max_pool2d(x, {3, 3}), dt, {1, 0, 0, 1}, {});
    Tensor e = make({}, {1, 0, 0, 1}, dt);
    check_tensor(ops::max_pool2d_grad(x, e, e, {3, 3}), dt, {1, 2, 2, 1}, {0, 0, 0, 0});
    check_tensor(ops::avg_pool2d_grad({1, 2, 2, 1}, e, {3, 3}), dt, {1, 2, 2, 1}, {0, 0, 0, 0});
    check_tensor(ops::avg_pool2d(make({}, {1, 2, 2, 0}, dt), {2, 2}), dt, {1, 1, 1, 0}, {});
  }
}

TEST_CASE("pooling errors name the op", "[ops][nn][pool]") {
  using Catch::Contains;
  Tensor x = make(iota(16, 1), {1, 4, 4, 1}, DType::Float32);
  for (auto pool : {&ops::max_pool2d, &ops::avg_pool2d}) {
    const char* name = pool == &ops::max_pool2d ? "max_pool2d" : "avg_pool2d";
    INFO(name);
    REQUIRE_THROWS_AS(pool(x, {0, 2}, {}), InvalidArgument);
    REQUIRE_THROWS_WITH(pool(x, {0, 2}, {}), Contains(name) && Contains("ksize"));
    REQUIRE_THROWS_WITH(pool(x, {2, 2}, {.strides = {1, 0}}), Contains(name) && Contains("strides"));
    REQUIRE_THROWS_WITH(pool(x, {2, 2}, {.padding = "CAUSAL"}), Contains(name) && Contains("CAUSAL"));
    REQUIRE_THROWS_WITH(pool(make(iota(16, 1), {4, 4, 1}, DType::Float32), {2, 2}, {}),
                        Contains(name) && Contains("rank 4"));
    REQUIRE_THROWS_WITH(pool(make(iota(16, 1), {1, 4, 4, 1}, DType::Int64), {2, 2}, {}),
                        Contains(name) && Contains("int64"));
    REQUIRE_THROWS_WITH(pool(make({1}, {1, 1, 1, 1}, DType::Float32), {3, 3}, {.strides = {1, 1}}),
                        Contains(name) && Contains("negative"));
  }
  Tensor y = ops::max_pool2d(x, {2, 2});
  REQUIRE_THROWS_AS(ops::max_pool2d_grad(x, y, y, {3, 3}), InvalidArgument);
  REQUIRE_THROWS_WITH(ops::max_pool2d_grad(x, y, y, {3, 3}), Contains("max_pool2d_grad") && Contains("orig_output"));
  REQUIRE_THROWS_WITH(ops::max_pool2d_grad(x, y, make(iota(4, 1), {1, 2, 2, 1}, DType::Float32), {2, 2}),
                      Contains("max_pool2d_grad") && Contains("grad"));
  REQUIRE_THROWS_WITH(ops::max_pool2d_grad(x, y, make(iota(9, 1), {1, 3, 3, 1}, DType::Float64), {2, 2}),
                      Contains("max_pool2d_grad") && Contains("float64"));
  REQUIRE_THROWS_AS(ops::avg_pool2d_grad({1, 4, 4, 1}, y, {2, 2}, {.strides = {2, 2}}), InvalidArgument);
  REQUIRE_THROWS_WITH(ops::avg_pool2d_grad({1, 4, 4, 1}, y, {2, 2}, {.strides = {2, 2}}),
                      Contains("avg_pool2d_grad") && Contains("(1, 2, 2, 1)"));
  REQUIRE_THROWS_WITH(ops::avg_pool2d_grad({1, 4, 4}, y, {2, 2}), Contains("avg_pool2d_grad"));
  REQUIRE_THROWS_WITH(ops::avg_pool2d_grad({1, 4, 4, 1}, make(iota(9, 1), {1, 3, 3, 1}, DType::UInt8), {2, 2}),
                      Contains("avg_pool2d_grad") && Contains("uint8"));
}
