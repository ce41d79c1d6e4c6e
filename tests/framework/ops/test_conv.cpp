// conv2d and its backprops: hand-computed cases, oneDNN float32 against the float64 loops, adjoint checks by
// finite differences, empty tensors and every error.
#include <algorithm>
#include <cmath>
#include <random>

#include "tests/support/tensor_testing.h"

using namespace ember;
using ember::testing::check_tensor;
using ember::testing::make;
using ember::testing::tolerance_for;
using ember::testing::same_values;
using ember::testing::values_as_double;
using ember::testing::iota;
using ember::testing::kFloatDTypes;
using ember::testing::uniform_values;
using ember::testing::dot;
using ember::testing::axpy;

namespace {

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

// got matches want within tol * (max |want| + 1) everywhere.
void check_close(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.size() == want.size());
  double scale = max_abs(want) + 1;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
  INFO("worst difference " << worst << ", scale " << scale);
  CHECK(worst <= tol * scale);
}

struct ConvCase {
  Shape input, filters;
  ops::Conv2DOptions options;
};

std::string describe(const ConvCase& c) {
  std::ostringstream os;
  os << "input " << c.input << " filters " << c.filters << " strides " << c.options.strides[0] << "x"
     << c.options.strides[1] << " " << c.options.padding << " dilations " << c.options.dilations[0] << "x"
     << c.options.dilations[1];
  return os.str();
}

std::vector<ConvCase> random_cases() {
  return {
      {{2, 7, 6, 3}, {3, 3, 3, 4}, {.strides = {1, 1}, .padding = "VALID"}},
      {{1, 8, 9, 4}, {3, 2, 2, 6}, {.strides = {2, 1}, .padding = "SAME"}},  // groups 2
      {{2, 9, 9, 2}, {3, 3, 2, 3}, {.strides = {1, 1}, .padding = "SAME", .dilations = {2, 3}}},
      {{1, 10, 7, 4}, {5, 3, 1, 8}, {.strides = {3, 2}, .padding = "SAME"}},  // depthwise x2
      {{3, 6, 6, 8}, {1, 1, 8, 5}, {.strides = {2, 2}, .padding = "VALID"}},
      {{1, 11, 13, 6}, {4, 4, 2, 6}, {.strides = {2, 2}, .padding = "same", .dilations = {2, 2}}},  // groups 3
      {{2, 9, 8, 3}, {2, 3, 3, 5}, {.strides = {2, 3}, .padding = "VALID", .dilations = {3, 1}}},
      {{4, 16, 16, 16}, {3, 3, 16, 32}, {.strides = {1, 1}, .padding = "SAME"}},
  };
}

}  // namespace

TEST_CASE("conv2d hand-computed VALID and SAME", "[ops][nn][conv]") {
  for (DType dt : kFloatDTypes) {
    INFO("dtype " << dt);
    double tol = tolerance_for(dt);
    Tensor x = make(iota(9, 1), {1, 3, 3, 1}, dt);
    Tensor w = make({1, 2, 3, 4}, {2, 2, 1, 1}, dt);
    check_tensor(ops::conv2d(x, w), dt, {1, 2, 2, 1}, {37, 47, 67, 77}, tol, tol);
    // SAME with stride 1 pads only after (bottom/right) when the total padding is 1.
    check_tensor(ops::conv2d(x, w, {.padding = "SAME"}), dt, {1, 3, 3, 1}, {37, 47, 21, 67, 77, 33, 23, 26, 9}, tol,
                 tol);
  }
}

TEST_CASE("conv2d SAME with stride 2 pads asymmetrically as TF", "[ops][nn][conv]") {
  // 4x4 input, 3x3 ones, stride 2: one padding pixel, placed after.
  Tensor x = make(iota(16, 1), {1, 4, 4, 1}, DType::Float32);
  Tensor ones = make(std::vector<double>(9, 1.0), {3, 3, 1, 1}, DType::Float32);
  check_tensor(ops::conv2d(x, ones, {.strides = {2, 2}, .padding = "SAME"}), DType::Float32, {1, 2, 2, 1},
               {54, 45, 72, 54});
  // Height 5, kernel 4, stride 2: total padding 3 = 1 before + 2 after. Weights 1, 10, 100, 1000 make each
  // output's digits name the input rows it saw.
  for (DType dt : {DType::Float32, DType::Float64, DType::Float16}) {
    INFO("dtype " << dt);
    Tensor col = make({1, 2, 3, 4, 5}, {1, 5, 1, 1}, dt);
    Tensor kcol = make({1, 10, 100, 1000}, {4, 1, 1, 1}, dt);
    check_tensor(ops::conv2d(col, kcol, {.strides = {2, 2}, .padding = "SAME"}), dt, {1, 3, 1, 1}, {3210, 5432, 54},
                 tolerance_for(dt), tolerance_for(dt));
    Tensor row = make({1, 2, 3, 4, 5}, {1, 1, 5, 1}, dt);
    Tensor krow = make({1, 10, 100, 1000}, {1, 4, 1, 1}, dt);
    check_tensor(ops::conv2d(row, krow, {.strides = {2, 2}, .padding = "SAME"}), dt, {1, 1, 3, 1}, {3210, 5432, 54},
                 tolerance_for(dt), tolerance_for(dt));
  }
}

TEST_CASE("conv2d with dilation 2", "[ops][nn][conv]") {
  for (DType dt : kFloatDTypes) {
    INFO("dtype " << dt);
    double tol = tolerance_for(dt);
    Tensor x = make(iota(25, 1), {1, 5, 5, 1}, dt);
    Tensor w = make({1, 2, 3, 4}, {2, 2, 1, 1}, dt);
    // out(i, j) = x[i][j] + 2 x[i][j+2] + 3 x[i+2][j] + 4 x[i+2][j+2] = 10 x[i][j] + 82.
    check_tensor(ops::conv2d(x, w, {.dilations = {2, 2}}), dt, {1, 3, 3, 1},
                 {92, 102, 112, 142, 152, 162, 192, 202, 212}, tol, tol);
    std::vector<double> same = values_as_double(ops::conv2d(x, w, {.padding = "SAME", .dilations = {2, 2}}));
    REQUIRE(same.size() == 25);
    CHECK(same[0] == 28);    // only tap (1, 1) lands inside: 4 * x[1][1]
    CHECK(same[12] == 152);  // centre: x[1][1] + 2 x[1][3] + 3 x[3][1] + 4 x[3][3]
  }
}

TEST_CASE("conv2d grouped and depthwise", "[ops][nn][conv]") {
  for (DType dt : kFloatDTypes) {
    INFO("dtype " << dt);
    double tol = tolerance_for(dt);
    // groups = 4 / 2: channels {0, 1} feed outputs {0, 1}, channels {2, 3} feed outputs {2, 3}.
    Tensor x = make({1, 2, 3, 4}, {1, 1, 1, 4}, dt);
    Tensor w = make(iota(8, 1), {1, 1, 2, 4}, dt);
    check_tensor(ops::conv2d(x, w), dt, {1, 1, 1, 4}, {11, 14, 37, 44}, tol, tol);
    // groups = C (depthwise), channel multiplier 2.
    Tensor x3 = make({1, 2, 3}, {1, 1, 1, 3}, dt);
    Tensor w3 = make(iota(6, 1), {1, 1, 1, 6}, dt);
    check_tensor(ops::conv2d(x3, w3), dt, {1, 1, 1, 6}, {1, 2, 6, 8, 15, 18}, tol, tol);
    // Spatial depthwise: channel 0 sums its window, channel 1 takes the diagonal.
    Tensor xs = make({1, 10, 2, 20, 3, 30, 4, 40}, {1, 2, 2, 2}, dt);
    Tensor ws = make({1, 1, 1, 0, 1, 0, 1, 1}, {2, 2, 1, 2}, dt);
    check_tensor(ops::conv2d(xs, ws), dt, {1, 1, 1, 2}, {10, 50}, tol, tol);
  }
}

TEST_CASE("conv2d backprops hand-computed", "[ops][nn][conv]") {
  for (DType dt : kFloatDTypes) {
    INFO("dtype " << dt);
    double tol = tolerance_for(dt);
    Tensor x = make(iota(9, 1), {1, 3, 3, 1}, dt);
    Tensor w = make({1, 2, 3, 4}, {2, 2, 1, 1}, dt);
    Tensor dy = make({1, 1, 1, 1}, {1, 2, 2, 1}, dt);
    check_tensor(ops::conv2d_backprop_input({1, 3, 3, 1}, w, dy), dt, {1, 3, 3, 1}, {1, 3, 2, 4, 10, 6, 3, 7, 4}, tol,
                 tol);
    check_tensor(ops::conv2d_backprop_filter(x, {2, 2, 1, 1}, dy), dt, {2, 2, 1, 1}, {12, 16, 24, 28}, tol, tol);
  }
}

TEST_CASE("conv2d float32 (oneDNN) matches the float64 loops", "[ops][nn][conv]") {
  uint32_t seed = 1;
  for (const ConvCase& c : random_cases()) {
    INFO(describe(c));
    std::vector<double> xv = uniform_values(c.input.num_elements(), seed++), wv = uniform_values(c.filters.num_elements(), seed++);
    Tensor y64 = ops::conv2d(make(xv, c.input, DType::Float64), make(wv, c.filters, DType::Float64), c.options);
    Tensor y32 = ops::conv2d(make(xv, c.input, DType::Float32), make(wv, c.filters, DType::Float32), c.options);
    REQUIRE(y32.shape() == y64.shape());
    REQUIRE(y32.num_elements() > 0);
    check_close(values_as_double(y32), values_as_double(y64), 1e-5);

    std::vector<double> dyv = uniform_values(y64.num_elements(), seed++);
    Tensor dx64 = ops::conv2d_backprop_input(c.input, make(wv, c.filters, DType::Float64),
                                             make(dyv, y64.shape(), DType::Float64), c.options);
    Tensor dx32 = ops::conv2d_backprop_input(c.input, make(wv, c.filters, DType::Float32),
                                             make(dyv, y64.shape(), DType::Float32), c.options);
    CHECK(dx32.shape() == c.input);
    check_close(values_as_double(dx32), values_as_double(dx64), 1e-5);

    Tensor dw64 = ops::conv2d_backprop_filter(make(xv, c.input, DType::Float64), c.filters,
                                              make(dyv, y64.shape(), DType::Float64), c.options);
    Tensor dw32 = ops::conv2d_backprop_filter(make(xv, c.input, DType::Float32), c.filters,
                                              make(dyv, y64.shape(), DType::Float32), c.options);
    CHECK(dw32.shape() == c.filters);
    check_close(values_as_double(dw32), values_as_double(dw64), 1e-5);

    // Running again hits the primitive cache and must give the same numbers.
    Tensor again = ops::conv2d(make(xv, c.input, DType::Float32), make(wv, c.filters, DType::Float32), c.options);
    CHECK(values_as_double(again) == values_as_double(y32));
  }
}

TEST_CASE("conv2d backprops are the adjoints of conv2d (float64 finite differences)", "[ops][nn][conv]") {
  uint32_t seed = 100;
  const double eps = 1e-3;
  for (const ConvCase& c : random_cases()) {
    INFO(describe(c));
    std::vector<double> xv = uniform_values(c.input.num_elements(), seed++), wv = uniform_values(c.filters.num_elements(), seed++);
    std::vector<double> dxv = uniform_values(c.input.num_elements(), seed++), dwv = uniform_values(c.filters.num_elements(), seed++);
    auto conv = [&](const std::vector<double>& x, const std::vector<double>& w) {
      return values_as_double(
          ops::conv2d(make(x, c.input, DType::Float64), make(w, c.filters, DType::Float64), c.options));
    };
    std::vector<double> y = conv(xv, wv);
    Shape out_shape =
        ops::conv2d(make(xv, c.input, DType::Float64), make(wv, c.filters, DType::Float64), c.options).shape();
    std::vector<double> dyv = uniform_values(static_cast<int64_t>(y.size()), seed++);
    Tensor dy = make(dyv, out_shape, DType::Float64);

    std::vector<double> gx =
        values_as_double(ops::conv2d_backprop_input(c.input, make(wv, c.filters, DType::Float64), dy, c.options));
    double fd_x = (dot(dyv, conv(axpy(xv, eps, dxv), wv)) - dot(dyv, conv(axpy(xv, -eps, dxv), wv))) / (2 * eps);
    CHECK(std::abs(fd_x - dot(gx, dxv)) <= 1e-8 * (std::abs(fd_x) + 1));

    std::vector<double> gw =
        values_as_double(ops::conv2d_backprop_filter(make(xv, c.input, DType::Float64), c.filters, dy, c.options));
    double fd_w = (dot(dyv, conv(xv, axpy(wv, eps, dwv))) - dot(dyv, conv(xv, axpy(wv, -eps, dwv)))) / (2 * eps);
    CHECK(std::abs(fd_w - dot(gw, dwv)) <= 1e-8 * (std::abs(fd_w) + 1));
  }
}

TEST_CASE("conv2d half types run the float32 path within tolerance", "[ops][nn][conv]") {
  uint32_t seed = 200;
  for (DType dt : {DType::Float16, DType::BFloat16}) {
    for (const ConvCase& c : random_cases()) {
      INFO(describe(c) << " dtype " << dt);
      // The reference sees the same rounded inputs, so only the output rounding and float32 sums differ.
      Tensor x = make(uniform_values(c.input.num_elements(), seed++), c.input, dt);
      Tensor w = make(uniform_values(c.filters.num_elements(), seed++), c.filters, dt);
      Tensor y = ops::conv2d(x, w, c.options);
      Tensor ref = ops::conv2d(make(values_as_double(x), c.input, DType::Float64),
                               make(values_as_double(w), c.filters, DType::Float64), c.options);
      CHECK(y.dtype() == dt);
      check_close(values_as_double(y), values_as_double(ref), tolerance_for(dt));

      Tensor dy = make(uniform_values(y.num_elements(), seed++), y.shape(), dt);
      Tensor dy64 = make(values_as_double(dy), y.shape(), DType::Float64);
      check_close(values_as_double(ops::conv2d_backprop_input(c.input, w, dy, c.options)),
                  values_as_double(ops::conv2d_backprop_input(
                      c.input, make(values_as_double(w), c.filters, DType::Float64), dy64, c.options)),
                  tolerance_for(dt));
      check_close(values_as_double(ops::conv2d_backprop_filter(x, c.filters, dy, c.options)),
                  values_as_double(ops::conv2d_backprop_filter(make(values_as_double(x), c.input, DType::Float64),
                                                               c.filters, dy64, c.options)),
                  tolerance_for(dt));
    }
  }
}

TEST_CASE("conv2d on empty tensors", "[ops][nn][conv]") {
  for (DType dt : kFloatDTypes) {
    INFO("dtype " << dt);
    // Empty batch.
    Tensor x0 = make({}, {0, 4, 4, 2}, dt);
    Tensor w = make(iota(36, 1), {3, 3, 2, 2}, dt);
    check_tensor(ops::conv2d(x0, w, {.padding = "SAME"}), dt, {0, 4, 4, 2}, {});
    check_tensor(ops::conv2d_backprop_input({0, 4, 4, 2}, w, make({}, {0, 4, 4, 2}, dt), {.padding = "SAME"}), dt,
                 {0, 4, 4, 2}, {});
    // An empty batch leaves nothing to sum: the filter gradient is zero.
    check_tensor(ops::conv2d_backprop_filter(x0, {3, 3, 2, 2}, make({}, {0, 2, 2, 2}, dt)), dt, {3, 3, 2, 2},
                 std::vector<double>(36, 0.0));
    // VALID with a window larger than the input: TF's (in - k + stride) / stride = 0 outputs.
    Tensor x = make(iota(8, 1), {1, 2, 2, 2}, dt);
    check_tensor(ops::conv2d(x, w), dt, {1, 0, 0, 2}, {});
    check_tensor(ops::conv2d_backprop_input({1, 2, 2, 2}, w, make({}, {1, 0, 0, 2}, dt)), dt, {1, 2, 2, 2},
                 std::vector<double>(8, 0.0));
    // No output channels.
    Tensor w0 = make({}, {3, 3, 2, 0}, dt);
    check_tensor(ops::conv2d(x, w0, {.padding = "SAME"}), dt, {1, 2, 2, 0}, {});
    check_tensor(ops::conv2d_backprop_input({1, 2, 2, 2}, w0, make({}, {1, 2, 2, 0}, dt), {.padding = "SAME"}), dt,
                 {1, 2, 2, 2}, std::vector<double>(8, 0.0));
  }
}

TEST_CASE("conv2d errors name the op", "[ops][nn][conv]") {
  Tensor x = make(iota(16, 1), {1, 2, 2, 4}, DType::Float32);
  Tensor w = make(iota(16, 1), {1, 1, 4, 4}, DType::Float32);
  using Catch::Contains;
  REQUIRE_THROWS_AS(ops::conv2d(make(iota(4, 1), {2, 2}, DType::Float32), w), InvalidArgument);
  REQUIRE_THROWS_WITH(ops::conv2d(make(iota(4, 1), {1, 2, 2}, DType::Float32), w),
                      Contains("conv2d") && Contains("rank 4"));
  REQUIRE_THROWS_WITH(ops::conv2d(x, make(iota(4, 1), {2, 2}, DType::Float32)), Contains("conv2d") && Contains("filters"));
  // Mixed dtypes name both.
  REQUIRE_THROWS_AS(ops::conv2d(x, make(iota(16, 1), {1, 1, 4, 4}, DType::Float64)), InvalidArgument);
  REQUIRE_THROWS_WITH(ops::conv2d(x, make(iota(16, 1), {1, 1, 4, 4}, DType::Float64)),
                      Contains("conv2d") && Contains("float32") && Contains("float64"));
  REQUIRE_THROWS_WITH(
      ops::conv2d(make(iota(16, 1), {1, 2, 2, 4}, DType::Int32), make(iota(16, 1), {1, 1, 4, 4}, DType::Int32)),
      Contains("conv2d") && Contains("int32"));
  // Filter depth 3 does not divide 4 channels; 3 outputs are not divisible by 2 groups.
  REQUIRE_THROWS_AS(ops::conv2d(x, make(iota(9, 1), {1, 1, 3, 3}, DType::Float32)), InvalidArgument);
  REQUIRE_THROWS_WITH(ops::conv2d(x, make(iota(9, 1), {1, 1, 3, 3}, DType::Float32)),
                      Contains("conv2d") && Contains("(1, 2, 2, 4)") && Contains("(1, 1, 3, 3)"));
  REQUIRE_THROWS_WITH(ops::conv2d(x, make(iota(6, 1), {1, 1, 2, 3}, DType::Float32)),
                      Contains("conv2d") && Contains("groups") && Contains("(1, 1, 2, 3)"));
  REQUIRE_THROWS_WITH(ops::conv2d(x, make({}, {0, 1, 4, 4}, DType::Float32)), Contains("conv2d"));
  REQUIRE_THROWS_WITH(ops::conv2d(x, w, {.strides = {0, 1}}), Contains("conv2d") && Contains("strides"));
  REQUIRE_THROWS_WITH(ops::conv2d(x, w, {.dilations = {1, 0}}), Contains("conv2d") && Contains("dilations"));
  REQUIRE_THROWS_AS(ops::conv2d(x, w, {.padding = "FULL"}), InvalidArgument);
  REQUIRE_THROWS_WITH(ops::conv2d(x, w, {.padding = "FULL"}), Contains("conv2d") && Contains("FULL"));
  CHECK(ops::conv2d(x, w, {.padding = "same"}).shape() == Shape{1, 2, 2, 4});
  CHECK(ops::conv2d(x, w, {.padding = "Valid"}).shape() == Shape{1, 2, 2, 4});
  // VALID with too small an input gives a negative size.
  REQUIRE_THROWS_WITH(ops::conv2d(make({1}, {1, 1, 1, 1}, DType::Float32), make(iota(9, 1), {3, 3, 1, 1}, DType::Float32)),
                      Contains("conv2d") && Contains("negative"));

  // Backprops: shapes checked against what the forward conv would produce.
  Tensor dy = make(iota(16, 1), {1, 2, 2, 4}, DType::Float32);
  REQUIRE_THROWS_AS(ops::conv2d_backprop_input({1, 3, 3, 4}, w, dy), InvalidArgument);
  REQUIRE_THROWS_WITH(ops::conv2d_backprop_input({1, 3, 3, 4}, w, dy),
                      Contains("conv2d_backprop_input") && Contains("(1, 3, 3, 4)"));
  REQUIRE_THROWS_WITH(ops::conv2d_backprop_input({1, 2, 2, 4}, w, make(iota(16, 1), {1, 2, 2, 4}, DType::Float64)),
                      Contains("conv2d_backprop_input") && Contains("float64"));
  REQUIRE_THROWS_WITH(ops::conv2d_backprop_input({1, 2, 2}, w, dy), Contains("conv2d_backprop_input"));
  REQUIRE_THROWS_WITH(ops::conv2d_backprop_input({1, 2, 2, 4}, w, dy, {.padding = "x"}),
                      Contains("conv2d_backprop_input"));
  REQUIRE_THROWS_AS(ops::conv2d_backprop_filter(x, {2, 2, 4, 4}, dy), InvalidArgument);
  REQUIRE_THROWS_WITH(ops::conv2d_backprop_filter(x, {2, 2, 4, 4}, dy),
                      Contains("conv2d_backprop_filter") && Contains("(2, 2, 4, 4)"));
  REQUIRE_THROWS_WITH(ops::conv2d_backprop_filter(x, {1, 1, 3, 4}, dy), Contains("conv2d_backprop_filter"));
  REQUIRE_THROWS_WITH(ops::conv2d_backprop_filter(x, {1, 1, 4, 4}, make(iota(16, 1), {1, 2, 2, 4}, DType::BFloat16)),
                      Contains("conv2d_backprop_filter") && Contains("bfloat16"));
}

TEST_CASE("conv2d_bias equals conv2d then add, conv2d_bias_relu its relu, in every floating dtype",
          "[ops][nn][conv]") {
  uint32_t seed = 101;
  for (const ConvCase& c : random_cases()) {
    INFO(describe(c));
    const int64_t out_channels = c.filters[3];
    std::vector<double> xv = uniform_values(c.input.num_elements(), seed++),
                        wv = uniform_values(c.filters.num_elements(), seed++),
                        bv = uniform_values(out_channels, seed++);
    for (DType dt : kFloatDTypes) {
      INFO("dtype " << dt);
      Tensor x = make(xv, c.input, dt), w = make(wv, c.filters, dt), b = make(bv, {out_channels}, dt);
      Tensor fused = ops::conv2d_bias(x, w, b, c.options);
      Tensor separate = ops::conv2d(x, w, c.options) + b;
      REQUIRE(fused.shape() == separate.shape());
      REQUIRE(fused.dtype() == dt);
      if (dt == DType::Float64) {
        // Float64 convolves as conv2d does, then adds once: the same bits.
        CHECK(values_as_double(fused) == values_as_double(separate));
      } else {
        // oneDNN adds the bias to the float32 sum, before the one rounding into dt: within the separate add's
        // rounding.
        check_close(values_as_double(fused), values_as_double(separate), dt == DType::Float32 ? 1e-6 : tolerance_for(dt));
      }
      Tensor with_relu = ops::conv2d_bias_relu(x, w, b, c.options);
      REQUIRE(with_relu.dtype() == dt);
      REQUIRE(with_relu.shape() == fused.shape());
      CHECK(values_as_double(with_relu) == values_as_double(ops::relu(fused)));
    }
  }
}

// oneDNN's relu turns NaN into 0: float32 gives it the relu only where no sum can overflow.
TEST_CASE("conv2d_bias_relu keeps the NaN and infinities relu would", "[ops][nn][conv]") {
  const double nan = std::nan("");
  // A 1x1 convolution of two channels into two: out0 = x0 + x1, out1 = x1 - x0 (then + bias 0.5, -0.5).
  Tensor w_sum = make({1, -1, 1, 1}, {1, 1, 2, 2}, DType::Float32);
  SECTION("a NaN input") {
    for (DType dt : kFloatDTypes) {
      INFO("dtype " << dt);
      Tensor x = make({nan, 1, 1, 2, -1, -2}, {1, 1, 3, 2}, dt), w = ops::cast(w_sum, dt);
      Tensor b = make({0.5, -0.5}, {2}, dt);
      std::vector<double> got = values_as_double(ops::conv2d_bias_relu(x, w, b));
      CHECK((std::isnan(got[0]) && std::isnan(got[1])));
      CHECK(same_values(got, values_as_double(ops::relu(ops::conv2d_bias(x, w, b)))));
    }
  }
  // oneDNN's single chain of FMAs gives +-inf here, not NaN; the bound keeps any other summation order safe too.
  SECTION("finite float32 operands whose products overflow") {
    Tensor x = make({1e30, 1e30, 1e30, -1e30, 1, 2}, {1, 1, 3, 2}, DType::Float32);
    Tensor w = make({1e30, 1e30, -1e30, 1e30}, {1, 1, 2, 2}, DType::Float32);
    Tensor b = make({0, 0}, {2}, DType::Float32);
    std::vector<double> got = values_as_double(ops::conv2d_bias_relu(x, w, b));
    CHECK(std::isinf(got[1]));
    CHECK(same_values(got, values_as_double(ops::relu(ops::conv2d_bias(x, w, b)))));
  }
  SECTION("an infinite filter or bias") {
    Tensor x = make({1, 2, -1, -2}, {1, 1, 2, 2}, DType::Float32);
    Tensor w = make({INFINITY, 1, 1, 1}, {1, 1, 2, 2}, DType::Float32);
    Tensor b = make({0, nan}, {2}, DType::Float32);
    std::vector<double> got = values_as_double(ops::conv2d_bias_relu(x, w, b));
    CHECK(std::isnan(got[1]));
    CHECK(same_values(got, values_as_double(ops::relu(ops::conv2d_bias(x, w, b)))));
  }
}

TEST_CASE("conv2d_bias on empty tensors and its errors", "[ops][nn][conv]") {
  for (DType dt : kFloatDTypes) {
    INFO("dtype " << dt);
    Tensor w = make(iota(36, 1), {3, 3, 2, 2}, dt), b = make({1, -2}, {2}, dt);
    check_tensor(ops::conv2d_bias(make({}, {0, 4, 4, 2}, dt), w, b, {.padding = "SAME"}), dt, {0, 4, 4, 2}, {});
    check_tensor(ops::conv2d_bias(make(iota(8, 1), {1, 2, 2, 2}, dt), w, b), dt, {1, 0, 0, 2}, {});
  }
  Tensor x = make(iota(16, 1), {1, 2, 2, 4}, DType::Float32);
  Tensor w = make(iota(16, 1), {1, 1, 4, 4}, DType::Float32);
  using Catch::Contains;
  REQUIRE_THROWS_AS(ops::conv2d_bias(x, w, make(iota(3, 1), {3}, DType::Float32)), InvalidArgument);
  REQUIRE_THROWS_WITH(ops::conv2d_bias(x, w, make(iota(3, 1), {3}, DType::Float32)),
                      Contains("conv2d_bias") && Contains("bias must have shape [4]") && Contains("(3,)"));
  REQUIRE_THROWS_WITH(ops::conv2d_bias(x, w, make(iota(4, 1), {1, 4}, DType::Float32)),
                      Contains("conv2d_bias") && Contains("(1, 4)"));
  REQUIRE_THROWS_WITH(ops::conv2d_bias(x, w, make(iota(4, 1), {4}, DType::Float64)),
                      Contains("conv2d_bias") && Contains("bias") && Contains("float64"));
  REQUIRE_THROWS_WITH(ops::conv2d_bias(x, w, make(iota(4, 1), {4}, DType::Float32), {.padding = "FULL"}),
                      Contains("conv2d_bias") && Contains("FULL"));
  REQUIRE_THROWS_WITH(ops::conv2d_bias_relu(x, w, make(iota(3, 1), {3}, DType::Float32)),
                      Contains("conv2d_bias_relu") && Contains("bias must have shape [4]"));
}
