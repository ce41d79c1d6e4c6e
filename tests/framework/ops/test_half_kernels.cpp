// The half-precision CPU kernels: bfloat16 matmul and conv2d (both gradients too) in oneDNN's native bf16
// primitives, float16 (and bfloat16 where oneDNN has no kernel) widened to float32. Each is held to the float64
// op on the same rounded inputs, elementwise within a fraction of the sum of the |terms| it adds (what a
// float32-accumulated, once-rounded result guarantees), with the native bf16 primitives on and switched off
// (the widening path a CPU without AVX-512 takes). Also the vectorised float32 <-> half conversions, bit for
// bit against static_cast.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "framework/ops/cpu/dnnl_context.h"
#include "framework/ops/cpu/half_convert.h"
#include "framework/ops/half_products.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using ember::testing::make;
using ember::testing::uniform_values;
using ember::testing::values_as_double;

namespace {

// Relative to the sum of |terms|: a float32 sum of them rounded once to the output type lands well inside.
double tolerance_of(DType dt) { return dt == DType::BFloat16 ? 1e-2 : 2e-3; }

// Switches the native bf16 primitives for the duration of a scope.
struct NativeBf16 {
  explicit NativeBf16(bool on) : before(dnnl_ctx::bf16_enabled()) { dnnl_ctx::set_bf16_enabled(on); }
  ~NativeBf16() { dnnl_ctx::set_bf16_enabled(before); }
  bool before;
};

// The values of t as its dtype rounded them, as a float64 tensor.
Tensor as_f64(const Tensor& t) { return make(values_as_double(t), t.shape(), DType::Float64); }

// got matches want within tol * scale elementwise, scale being the float64 op on |operands| (the sum of |terms|).
void check_within(const Tensor& got, const Tensor& want, const Tensor& scale, double tol) {
  REQUIRE(got.shape() == want.shape());
  const std::vector<double> g = values_as_double(got), w = values_as_double(want), s = values_as_double(scale);
  double worst = 0;
  size_t worst_i = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const double excess = std::abs(g[i] - w[i]) - tol * s[i] - 1e-30;
    if (i == 0 || excess > worst) worst = excess, worst_i = i;
  }
  INFO("worst element " << worst_i << ": got " << g[worst_i] << ", want " << w[worst_i] << ", sum of |terms| "
                        << s[worst_i]);
  CHECK(worst <= 0);
}

struct MatmulCase {
  Shape a, b;
  bool ta = false, tb = false;
};

std::vector<MatmulCase> matmul_cases() {
  return {
      {{7, 33}, {33, 13}},
      {{64, 96}, {96, 80}},
      {{96, 64}, {96, 80}, true, false},
      {{64, 96}, {80, 96}, false, true},
      {{96, 64}, {80, 96}, true, true},
      {{128, 1600}, {1600, 128}},                 // the Fashion-MNIST CNN's dense layer
      {{128, 1600}, {128, 128}, true, false},     // its kernel gradient, x^T @ dy
      {{128, 128}, {1600, 128}, false, true},     // its input gradient, dy @ W^T
      {{3, 17, 40}, {40, 24}},                    // batches against one shared b
      {{3, 40, 17}, {40, 24}, true, false},
      {{4, 20, 30}, {4, 30, 10}},                 // batched both sides
      {{2, 1, 16, 24}, {1, 3, 24, 8}},            // broadcast batch dims
      {{2, 3, 16, 24}, {3, 8, 24}, false, true},  // b broadcast over the outer batch dim
      {{2, 2, 2, 2, 2, 5, 6}, {6, 4}},            // more batch dims than oneDNN takes
      {{2, 1, 2, 1, 2, 5, 6}, {2, 1, 2, 1, 6, 4}},
  };
}

void check_matmul_cases(DType dt) {
  uint32_t seed = 1;
  for (const MatmulCase& c : matmul_cases()) {
    INFO("a " << c.a << (c.ta ? "^T" : "") << " @ b " << c.b << (c.tb ? "^T" : "") << ", " << dt);
    const Tensor a = make(uniform_values(c.a.num_elements(), seed++), c.a, dt);
    const Tensor b = make(uniform_values(c.b.num_elements(), seed++), c.b, dt);
    const ops::MatMulOptions o{.transpose_a = c.ta, .transpose_b = c.tb};
    const Tensor got = ops::matmul(a, b, o);
    CHECK(got.dtype() == dt);
    check_within(got, ops::matmul(as_f64(a), as_f64(b), o), ops::matmul(ops::abs(as_f64(a)), ops::abs(as_f64(b)), o),
                 tolerance_of(dt));
  }
}

struct ConvCase {
  Shape input, filters;
  ops::Conv2DOptions options;
};

std::vector<ConvCase> conv_cases() {
  return {
      {{8, 28, 28, 1}, {3, 3, 1, 32}, {}},   // the Fashion-MNIST CNN's convolutions
      {{8, 13, 13, 32}, {3, 3, 32, 64}, {}},
      {{2, 7, 6, 3}, {3, 3, 3, 4}, {.strides = {1, 1}, .padding = "VALID"}},
      {{2, 12, 12, 16}, {3, 3, 16, 32}, {.strides = {2, 2}, .padding = "SAME"}},
      {{1, 8, 9, 4}, {3, 2, 2, 6}, {.strides = {2, 1}, .padding = "SAME"}},  // groups 2
      {{2, 9, 9, 2}, {3, 3, 2, 3}, {.strides = {1, 1}, .padding = "SAME", .dilations = {2, 3}}},
      {{1, 10, 7, 4}, {5, 3, 1, 8}, {.strides = {3, 2}, .padding = "SAME"}},  // depthwise x2
      {{3, 6, 6, 8}, {1, 1, 8, 5}, {.strides = {2, 2}, .padding = "VALID"}},
      {{1, 11, 13, 6}, {4, 4, 2, 6}, {.strides = {2, 2}, .padding = "same", .dilations = {2, 2}}},  // groups 3
      {{4, 16, 16, 32}, {3, 3, 8, 64}, {.padding = "SAME"}},                                           // groups 4
      {{2, 9, 8, 3}, {2, 3, 3, 5}, {.strides = {2, 3}, .padding = "VALID", .dilations = {3, 1}}},
  };
}

void check_conv_cases(DType dt) {
  uint32_t seed = 100;
  const double tol = tolerance_of(dt);
  for (const ConvCase& c : conv_cases()) {
    const ops::Conv2DOptions& o = c.options;
    INFO("input " << c.input << " filters " << c.filters << " strides " << o.strides[0] << "x" << o.strides[1] << " "
                  << o.padding << " dilations " << o.dilations[0] << "x" << o.dilations[1] << ", " << dt);
    const Tensor x = make(uniform_values(c.input.num_elements(), seed++), c.input, dt);
    const Tensor w = make(uniform_values(c.filters.num_elements(), seed++), c.filters, dt);
    const Tensor x64 = as_f64(x), w64 = as_f64(w), ax = ops::abs(x64), aw = ops::abs(w64);
    const Tensor y = ops::conv2d(x, w, o);
    CHECK(y.dtype() == dt);
    check_within(y, ops::conv2d(x64, w64, o), ops::conv2d(ax, aw, o), tol);

    const Tensor dy = make(uniform_values(y.num_elements(), seed++), y.shape(), dt);
    const Tensor dy64 = as_f64(dy), ady = ops::abs(dy64);
    const Tensor dx = ops::conv2d_backprop_input(c.input, w, dy, o);
    CHECK(dx.dtype() == dt);
    check_within(dx, ops::conv2d_backprop_input(c.input, w64, dy64, o), ops::conv2d_backprop_input(c.input, aw, ady, o),
                 tol);
    const Tensor dw = ops::conv2d_backprop_filter(x, c.filters, dy, o);
    CHECK(dw.dtype() == dt);
    check_within(dw, ops::conv2d_backprop_filter(x64, c.filters, dy64, o),
                 ops::conv2d_backprop_filter(ax, c.filters, ady, o), tol);
  }
}

}  // namespace

TEST_CASE("bfloat16 matmul (native oneDNN) matches float64 on the rounded inputs", "[ops][linalg][matmul][half]") {
  check_matmul_cases(DType::BFloat16);
}

TEST_CASE("bfloat16 matmul widened to float32 matches float64 on the rounded inputs", "[ops][linalg][matmul][half]") {
  NativeBf16 off(false);
  check_matmul_cases(DType::BFloat16);
}

TEST_CASE("float16 matmul matches float64 on the rounded inputs", "[ops][linalg][matmul][half]") {
  check_matmul_cases(DType::Float16);
}

TEST_CASE("half matmul accumulates in float32", "[ops][linalg][matmul][half]") {
  // 4096 products of 1: a bf16 running sum would stall at 256 (256 + 1 rounds to 256), a float16 one at 2048.
  for (bool native : {true, false}) {
    NativeBf16 scope(native);
    for (DType dt : {DType::BFloat16, DType::Float16}) {
      INFO(dt << (native ? "" : ", native bf16 off"));
      const Tensor a = ops::ones({16, 4096}, dt), b = ops::ones({4096, 32}, dt);
      for (double v : values_as_double(ops::matmul(a, b))) REQUIRE(v == 4096);
      for (double v : values_as_double(ops::matmul(ops::ones({4096, 16}, dt), b, {.transpose_a = true})))
        REQUIRE(v == 4096);
    }
  }
}

TEST_CASE("bfloat16 matmul: the native and widened paths agree", "[ops][linalg][matmul][half]") {
  const Tensor a = make(uniform_values(96 * 200, 7), {96, 200}, DType::BFloat16);
  const Tensor b = make(uniform_values(200 * 48, 8), {200, 48}, DType::BFloat16);
  Tensor native = ops::matmul(a, b), widened;
  {
    NativeBf16 off(false);
    widened = ops::matmul(a, b);
  }
  // Both sum in float32 (maybe in different orders) and round once: at most one bf16 step apart.
  const std::vector<double> n = values_as_double(native), w = values_as_double(widened);
  for (size_t i = 0; i < n.size(); ++i) REQUIRE(std::abs(n[i] - w[i]) <= std::abs(w[i]) * (1.0 / 128) + 1e-6);
  // And the primitive cache gives the same numbers on a second call.
  CHECK(values_as_double(ops::matmul(a, b)) == n);
}

TEST_CASE("bfloat16 conv2d and gradients (native oneDNN) match float64 on the rounded inputs",
          "[ops][nn][conv][half]") {
  check_conv_cases(DType::BFloat16);
}

TEST_CASE("bfloat16 conv2d and gradients widened to float32 match float64 on the rounded inputs",
          "[ops][nn][conv][half]") {
  NativeBf16 off(false);
  check_conv_cases(DType::BFloat16);
}

TEST_CASE("float16 conv2d and gradients match float64 on the rounded inputs", "[ops][nn][conv][half]") {
  check_conv_cases(DType::Float16);
}

TEST_CASE("half conv2d gradients accumulate in float32", "[ops][nn][conv][half]") {
  // The filter gradient of a 1x1 convolution sums over every pixel: 8 * 32 * 32 = 8192 products of 1.
  for (bool native : {true, false}) {
    NativeBf16 scope(native);
    for (DType dt : {DType::BFloat16, DType::Float16}) {
      INFO(dt << (native ? "" : ", native bf16 off"));
      const Tensor x = ops::ones({8, 32, 32, 16}, dt), dy = ops::ones({8, 32, 32, 16}, dt);
      for (double v : values_as_double(ops::conv2d_backprop_filter(x, {1, 1, 16, 16}, dy))) REQUIRE(v == 8192);
    }
  }
}

TEST_CASE("float32 <-> half buffer conversions match static_cast bit for bit", "[ops][half]") {
  // Every 16-bit pattern, widened; the count is not a multiple of the vector width, so the tail runs too.
  std::vector<uint16_t> bits(65536 + 5);
  for (size_t i = 0; i < bits.size(); ++i) bits[i] = static_cast<uint16_t>(i);
  const int64_t nb = static_cast<int64_t>(bits.size());
  std::vector<float> f(bits.size());
  cpu::widen(reinterpret_cast<const half*>(bits.data()), f.data(), nb);
  for (size_t i = 0; i < bits.size(); ++i) {
    const float want = static_cast<float>(Eigen::numext::bit_cast<half>(bits[i]));
    REQUIRE((std::memcmp(&want, &f[i], 4) == 0 || (std::isnan(want) && std::isnan(f[i]))));
  }
  cpu::widen(reinterpret_cast<const bfloat16*>(bits.data()), f.data(), nb);
  for (size_t i = 0; i < bits.size(); ++i) {
    const float want = static_cast<float>(Eigen::numext::bit_cast<bfloat16>(bits[i]));
    REQUIRE(std::memcmp(&want, &f[i], 4) == 0);
  }

  // Narrowing: random bit patterns (NaNs, infinities, denormals), values near the half types' rounding ties
  // and overflow, and the special values.
  std::mt19937 gen(3);
  std::vector<float> x(200003);
  for (size_t i = 0; i < x.size(); ++i) {
    uint32_t u = static_cast<uint32_t>(gen());
    if (i % 3 == 1) u = (u & 0x80001fffu) | 0x38000000u;  // near float16's normal range, many ties
    if (i % 3 == 2) u = (u & 0x807fffffu) | 0x3f000000u;
    std::memcpy(&x[i], &u, 4);
  }
  const float inf = std::numeric_limits<float>::infinity();
  const float specials[] = {inf, -inf, std::nanf(""), -std::nanf(""), 65504.f, 65519.f, 65520.f, 1e-8f, -0.0f,
                            3.0e38f, 1.0f + 1.0f / 256, 1.0f + 3.0f / 256, 1.0f + 1.0f / 2048};
  for (size_t i = 0; i < std::size(specials); ++i) x[i] = specials[i];
  const int64_t nx = static_cast<int64_t>(x.size());
  std::vector<half> h(x.size());
  std::vector<bfloat16> b(x.size());
  cpu::narrow(x.data(), h.data(), nx);
  cpu::narrow(x.data(), b.data(), nx);
  for (size_t i = 0; i < x.size(); ++i) {
    INFO("element " << i << " = " << x[i]);
    const half wh = static_cast<half>(x[i]);
    const bfloat16 wb = static_cast<bfloat16>(x[i]);
    REQUIRE((std::memcmp(&wh, &h[i], 2) == 0 || (std::isnan(x[i]) && Eigen::numext::isnan(h[i]))));
    REQUIRE(std::memcmp(&wb, &b[i], 2) == 0);
  }
  INFO("conversions use " << cpu::half_convert_isa());
  SUCCEED();
}

namespace {

// Bits of the float32 values of t rounded to dt by Eigen's static_cast (the reference the kernels must equal).
std::vector<uint16_t> rounded_bits(const Tensor& f32, DType dt) {
  const std::vector<double> v = values_as_double(f32);
  std::vector<uint16_t> bits(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const float f = static_cast<float>(v[i]);
    bits[i] = dt == DType::BFloat16 ? Eigen::numext::bit_cast<uint16_t>(static_cast<bfloat16>(f))
                                    : Eigen::numext::bit_cast<uint16_t>(static_cast<half>(f));
  }
  return bits;
}

std::vector<uint16_t> bits_of(const Tensor& t) {
  std::vector<uint16_t> bits(static_cast<size_t>(t.num_elements()));
  std::memcpy(bits.data(), t.raw_data(), bits.size() * 2);
  return bits;
}

// Equal bits, or both NaN.
void check_same_bits(const Tensor& got, const Tensor& want_f32, DType dt) {
  REQUIRE(got.dtype() == dt);
  const std::vector<uint16_t> g = bits_of(got), w = rounded_bits(want_f32, dt);
  REQUIRE(g.size() == w.size());
  const std::vector<double> gv = values_as_double(got), wv = values_as_double(want_f32);
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < g.size(); ++i)
    if (g[i] != w[i] && !(std::isnan(gv[i]) && std::isnan(wv[i]))) first = bad++ ? first : i;
  INFO(bad << " elements differ; the first is " << first << ": got " << gv[first] << ", want " << wv[first]);
  CHECK(bad == 0);
}

// Values spread over magnitudes, with some exactly halfway between two bfloat16 / float16 numbers, infinities
// and NaNs.
std::vector<double> awkward_values(int64_t n, uint32_t seed) {
  std::vector<double> v = uniform_values(n, seed);
  for (size_t i = 0; i < v.size(); ++i) {
    if (i % 7 == 1) v[i] *= 1e4;
    if (i % 11 == 2) v[i] = 1.0 + 1.0 / 256 + (i % 2 ? 1.0 / 2048 : 0);  // halfway cases
    if (i % 13 == 3) v[i] = (i % 2 ? -1 : 1) * std::numeric_limits<double>::infinity();
    if (i % 97 == 5) v[i] = std::numeric_limits<double>::quiet_NaN();
  }
  return v;
}

}  // namespace

// Off oneDNN's bf16 primitives (float16 always, bfloat16 without AMX) conv2d_bias and the input gradient widen their
// operands and run the float32 primitive a chunk of images at a time, bias and relu inside it where
// relu_post_op_exact allows for the chunk (asked of the float32 copies): the float32 op on the whole widened
// batch, rounded once, bit for bit, whether the relu was fused (finite operands) or not (a NaN input, in the last
// chunk). Shapes: one image's worth, and the example CNN's two convolutions at batches that make 2 or 3 chunks
// (chunks grow with the intra-op threads: 1 and 2 here).
TEST_CASE("half conv2d_bias and input gradient off the bf16 primitives: the float32 op on the widened batch, "
          "rounded once",
          "[ops][nn][conv][half]") {
  NativeBf16 off(false);
  const std::pair<Shape, Shape> cases[] = {
      {{3, 9, 9, 20}, {3, 3, 20, 16}}, {{32, 28, 28, 1}, {3, 3, 1, 32}}, {{48, 13, 13, 32}, {3, 3, 32, 64}}};
  const int before = config::get_intra_op_parallelism_threads();
  uint32_t seed = 21;
  for (int threads : {1, 2})
    for (const auto& [xs, ws] : cases)
      for (bool with_nan : {false, true})
        for (DType dt : {DType::BFloat16, DType::Float16}) {
          config::set_intra_op_parallelism_threads(threads);
          INFO("x " << xs << ", w " << ws << ", " << dt << (with_nan ? ", a NaN input" : "")
                    << ", threads " << threads);
          std::vector<double> xv = uniform_values(xs.num_elements(), seed++);
          if (with_nan) xv[xv.size() - 5] = std::numeric_limits<double>::quiet_NaN();
          const Shape ys{xs[0], xs[1] - 2, xs[2] - 2, ws[3]};
          const Tensor x = make(xv, xs, dt), w = make(uniform_values(ws.num_elements(), seed++), ws, dt),
                       b = make(uniform_values(ws[3], seed++), {ws[3]}, dt),
                       dy = make(uniform_values(ys.num_elements(), seed++), ys, dt);
          const Tensor x32 = ops::cast(x, DType::Float32), w32 = ops::cast(w, DType::Float32),
                       b32 = ops::cast(b, DType::Float32), dy32 = ops::cast(dy, DType::Float32);
          check_same_bits(ops::conv2d_bias(x, w, b), ops::conv2d_bias(x32, w32, b32), dt);
          check_same_bits(ops::conv2d_bias_relu(x, w, b), ops::conv2d_bias_relu(x32, w32, b32), dt);
          check_same_bits(ops::conv2d_backprop_input(xs, w, dy), ops::conv2d_backprop_input(xs, w32, dy32), dt);
        }
  config::set_intra_op_parallelism_threads(before);
}

TEST_CASE("half elementwise, reduction, pooling and cast kernels round as static_cast does", "[ops][half]") {
  const Shape shape{4, 26, 26, 32};  // beyond one parallel grain, as the CNN's activations
  for (DType dt : {DType::BFloat16, DType::Float16}) {
    INFO(dt);
    const Tensor x = make(awkward_values(shape.num_elements(), 1), shape, dt);
    const Tensor y = make(awkward_values(shape.num_elements(), 2), shape, dt);
    const Tensor bias = make(uniform_values(32, 3), {32}, dt);
    const Tensor x32 = ops::cast(x, DType::Float32), y32 = ops::cast(y, DType::Float32),
                 b32 = ops::cast(bias, DType::Float32);
    check_same_bits(ops::relu(x), ops::relu(x32), dt);
    check_same_bits(ops::add(x, y), ops::add(x32, y32), dt);
    check_same_bits(ops::mul(x, y), ops::mul(x32, y32), dt);
    check_same_bits(ops::add(x, bias), ops::add(x32, b32), dt);  // the bias add's broadcast rows
    check_same_bits(ops::mul(x, Tensor::scalar_of(3, dt)), ops::mul(x32, Tensor::scalar_of(3, DType::Float32)), dt);
    check_same_bits(ops::sub(Tensor::scalar_of(1, dt), y), ops::sub(Tensor::scalar_of(1, DType::Float32), y32), dt);
    // Broadcast rows whose first operand repeats one value along the row, and a column against a row.
    const Tensor col = make(awkward_values(2704, 7), {4, 26, 26, 1}, dt), col32 = ops::cast(col, DType::Float32);
    check_same_bits(ops::sub(col, x), ops::sub(col32, x32), dt);
    const Tensor row = make(awkward_values(300, 8), {1, 300}, dt), column = make(awkward_values(70, 9), {70, 1}, dt);
    check_same_bits(ops::div(column, row), ops::div(ops::cast(column, DType::Float32), ops::cast(row, DType::Float32)),
                    dt);
    CHECK(values_as_double(ops::is_finite(x)) == values_as_double(ops::is_finite(x32)));
    CHECK(values_as_double(ops::cast(x, DType::Int32)) == values_as_double(ops::cast(x32, DType::Int32)));
    // A bool mask (dropout's) into every floating type: 1 where set, +0 elsewhere.
    const Tensor mask = ops::greater(x, Tensor::scalar_of(0, dt));
    const std::vector<double> m = values_as_double(mask);
    for (DType to : {DType::Float32, DType::Float16, DType::BFloat16}) {
      INFO("bool to " << to);
      const Tensor c = ops::cast(mask, to);
      CHECK(values_as_double(c) == m);
      if (to != DType::Float32) CHECK(bits_of(c) == rounded_bits(ops::cast(mask, DType::Float32), to));
    }
    check_same_bits(ops::sigmoid(x), ops::sigmoid(x32), dt);
    CHECK(values_as_double(ops::greater(x, Tensor::scalar_of(0, dt))) ==
          values_as_double(ops::greater(x32, Tensor::scalar_of(0, DType::Float32))));
    // Casts both ways: from float32 rounds as static_cast, to float32 is exact.
    const Tensor wide = make(awkward_values(shape.num_elements(), 4), shape, DType::Float32);
    check_same_bits(ops::cast(wide, dt), wide, dt);
    CHECK(bits_of(ops::cast(ops::cast(x, DType::Float32), dt)) == bits_of(x));
    // The bias gradient's reduction and the pooling ops (finite values: NaN placement is not what is tested).
    const Tensor f = make(uniform_values(shape.num_elements(), 5), shape, dt), f32 = ops::cast(f, DType::Float32);
    check_same_bits(ops::reduce_sum(f, {0, 1, 2}), ops::reduce_sum(f32, {0, 1, 2}), dt);
    check_same_bits(ops::reduce_sum(f, {3}), ops::reduce_sum(f32, {3}), dt);  // rows
    check_same_bits(ops::reduce_sum(f, {0, 1, 2, 3}), ops::reduce_sum(f32, {0, 1, 2, 3}), dt);
    check_same_bits(ops::reduce_max(x, {1, 2}), ops::reduce_max(x32, {1, 2}), dt);  // NaNs and infinities
    const Tensor pooled = ops::max_pool2d(f, {2, 2}, {.strides = {2, 2}});
    check_same_bits(pooled, ops::max_pool2d(f32, {2, 2}, {.strides = {2, 2}}), dt);
    const Tensor dy = make(uniform_values(pooled.num_elements(), 6), pooled.shape(), dt);
    check_same_bits(ops::max_pool2d_grad(f, pooled, dy, {2, 2}, {.strides = {2, 2}}),
                    ops::max_pool2d_grad(f32, ops::cast(pooled, DType::Float32), ops::cast(dy, DType::Float32),
                                         {2, 2}, {.strides = {2, 2}}),
                    dt);
    // Odd rows and columns (in no window) and a channel count off the vector width.
    for (const Shape& odd : {Shape{2, 11, 11, 64}, Shape{3, 7, 9, 5}}) {
      INFO(odd);
      const Tensor o = make(awkward_values(odd.num_elements(), 10), odd, dt), o32 = ops::cast(o, DType::Float32);
      const Tensor op = ops::max_pool2d(o, {2, 2}, {.strides = {2, 2}});
      check_same_bits(op, ops::max_pool2d(o32, {2, 2}, {.strides = {2, 2}}), dt);
      const Tensor ody = make(awkward_values(op.num_elements(), 11), op.shape(), dt);
      check_same_bits(ops::max_pool2d_grad(o, op, ody, {2, 2}, {.strides = {2, 2}}),
                      ops::max_pool2d_grad(o32, ops::cast(op, DType::Float32), ops::cast(ody, DType::Float32), {2, 2},
                                           {.strides = {2, 2}}),
                      dt);
    }
    check_same_bits(ops::avg_pool2d(f, {3, 3}, {.padding = "SAME"}),
                    ops::avg_pool2d(f32, {3, 3}, {.padding = "SAME"}), dt);
  }
}

TEST_CASE("where with full and scalar operands, every element size", "[ops][half]") {
  const int64_t n = 100003;  // several parallel chunks and a ragged tail
  // Small whole numbers, exact in every dtype (and in range for uint8).
  std::vector<double> cv(static_cast<size_t>(n)), av = uniform_values(n, 7), bv = uniform_values(n, 8);
  for (size_t i = 0; i < cv.size(); ++i) {
    cv[i] = (i * 2654435761u) % 3 == 0;
    av[i] = std::floor((av[i] + 1) * 50);
    bv[i] = std::floor((bv[i] + 1) * 50);
  }
  const Tensor cond = make(cv, {n}, DType::Bool);
  for (DType dt : {DType::Float32, DType::Float64, DType::BFloat16, DType::Float16, DType::Int32, DType::UInt8,
                   DType::Bool}) {
    INFO(dt);
    const Tensor a = make(ember::testing::as_dtype_values(dt, av), {n}, dt),
                 b = make(ember::testing::as_dtype_values(dt, bv), {n}, dt);
    const Tensor s = Tensor::scalar_of(dt == DType::Bool ? 1 : 3, dt);
    const std::vector<double> va = values_as_double(a), vb = values_as_double(b), vs = values_as_double(s);
    std::vector<double> full(va.size()), a_s(va.size()), s_b(va.size());
    for (size_t i = 0; i < va.size(); ++i) {
      full[i] = cv[i] ? va[i] : vb[i];
      a_s[i] = cv[i] ? va[i] : vs[0];
      s_b[i] = cv[i] ? vs[0] : vb[i];
    }
    CHECK(values_as_double(ops::where(cond, a, b)) == full);
    CHECK(values_as_double(ops::where(cond, a, s)) == a_s);
    CHECK(values_as_double(ops::where(cond, s, b)) == s_b);
    // A broadcast condition still takes the general path.
    const Tensor row = make({1, 0, 1}, {1, 3}, DType::Bool), m = make({1, 2, 3, 4, 5, 6}, {2, 3}, dt);
    const std::vector<double> vm = values_as_double(m);
    CHECK(values_as_double(ops::where(row, m, s)) == std::vector<double>{vm[0], vs[0], vm[2], vm[3], vs[0], vm[5]});
  }
}

TEST_CASE("bfloat16 runs on oneDNN's native kernels only where they beat float32", "[ops][half]") {
  using K = dnnl_ctx::Bf16Kernels;
  const dnnl_ctx::PeakRates slow_dot{100, 50}, fast_dot{100, 200}, even{100, 100}, unmeasured{};
  // AMX decides alone; without it the bfloat16 dot product must run at 1.5x float32's FMA rate or more.
  CHECK(dnnl_ctx::choose_bf16_kernels(true, true, slow_dot) == K::kAmx);
  CHECK(dnnl_ctx::choose_bf16_kernels(true, true, unmeasured) == K::kAmx);
  CHECK(dnnl_ctx::choose_bf16_kernels(false, true, fast_dot) == K::kAvx512);
  CHECK(dnnl_ctx::choose_bf16_kernels(false, true, dnnl_ctx::PeakRates{100, 150}) == K::kAvx512);
  CHECK(dnnl_ctx::choose_bf16_kernels(false, true, even) == K::kNone);
  CHECK(dnnl_ctx::choose_bf16_kernels(false, true, slow_dot) == K::kNone);
  CHECK(dnnl_ctx::choose_bf16_kernels(false, true, unmeasured) == K::kNone);
  CHECK(dnnl_ctx::choose_bf16_kernels(false, false, fast_dot) == K::kNone);

  // This CPU's choice is what the ops follow: the graph compiler's view of the products agrees with it.
  const K here = dnnl_ctx::native_bf16_kernels();
  INFO("this CPU: " << (here == K::kAmx ? "AMX" : here == K::kAvx512 ? "AVX512-BF16" : "widened"));
  CHECK(ops::cpu_matmul_widens_half(DType::BFloat16) == (here == K::kNone));
  CHECK(dnnl_ctx::min_bf16_conv_channels() == (here == K::kAmx ? 16 : 1));
  {
    NativeBf16 off(false);
    CHECK(ops::cpu_matmul_widens_half(DType::BFloat16));
  }
  CHECK(ops::cpu_matmul_widens_half(DType::Float16));
}

TEST_CASE("peak_rates measures both instructions where the CPU has AVX512-BF16", "[ops][half]") {
  const dnnl_ctx::PeakRates r = dnnl_ctx::peak_rates(10'000, 2);
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512bf16")) {
    CHECK(r.fma_gflops > 0);
    CHECK(r.bf16_dot_gflops > 0);
    CHECK(std::isfinite(r.fma_gflops));
    CHECK(std::isfinite(r.bf16_dot_gflops));
    return;
  }
#endif
  CHECK(r.fma_gflops == 0);
  CHECK(r.bf16_dot_gflops == 0);
}
