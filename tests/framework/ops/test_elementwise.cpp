// Elementwise ops against hand-computed values: every accepted dtype, broadcasting, empty tensors,
// special values and the error messages.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "framework/ember.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using ember::testing::check_tensor;
using ember::testing::make;
using ember::testing::tolerance_for;

namespace {

const std::vector<DType> kFloats = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16};
const std::vector<DType> kSigned = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16,
                                    DType::Int32,   DType::Int64};
const std::vector<DType> kNumeric = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16,
                                     DType::Int32,   DType::Int64,   DType::UInt8};
const std::vector<DType> kAll = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16,
                                 DType::Int32,   DType::Int64,   DType::UInt8,   DType::Bool};
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

using UnaryFn = std::function<Tensor(const Tensor&)>;
using BinaryFn = std::function<Tensor(const Tensor&, const Tensor&)>;

void check_close(const Tensor& t, DType dt, const Shape& shape, const std::vector<double>& expected) {
  double tol = tolerance_for(dt);
  check_tensor(t, dt, shape, expected, tol, tol);
}

}  // namespace

#define CHECK_INVALID(expr, matcher)            \
  do {                                          \
    REQUIRE_THROWS_AS(expr, InvalidArgument);   \
    REQUIRE_THROWS_WITH(expr, matcher);         \
  } while (0)

TEST_CASE("floating unary ops match hand-computed values in every floating dtype", "[ops][elementwise]") {
  struct Case {
    const char* name;
    UnaryFn fn;
    std::vector<double> x, expected;
  };
  const std::vector<double> x = {-2, -0.5, 0, 0.5, 2};
  const std::vector<double> pos = {0.25, 1, 4};
  const std::vector<Case> cases = {
      {"exp", ops::exp, x, {0.1353352832366127, 0.6065306597126334, 1, 1.6487212707001282, 7.38905609893065}},
      {"sin", ops::sin, x, {-0.9092974268256817, -0.479425538604203, 0, 0.479425538604203, 0.9092974268256817}},
      {"cos", ops::cos, x, {-0.4161468365471424, 0.8775825618903728, 1, 0.8775825618903728, -0.4161468365471424}},
      {"tanh", ops::tanh, x, {-0.9640275800758169, -0.46211715726000974, 0, 0.46211715726000974, 0.9640275800758169}},
      {"sigmoid", ops::sigmoid, x, {0.11920292202211755, 0.3775406687981454, 0.5, 0.6224593312018546, 0.8807970779778823}},
      {"elu", ops::elu, x, {-0.8646647167633873, -0.3934693402873666, 0, 0.5, 2}},
      {"selu", ops::selu, x, {-1.5201664685956948, -0.6917581878028713, 0, 0.5253504936777402, 2.101401974710961}},
      {"gelu", [](const Tensor& t) { return ops::gelu(t); }, x,
       {-0.04550026389635842, -0.15426876936299344, 0, 0.34573123063700656, 1.9544997361036416}},
      {"gelu approximate", [](const Tensor& t) { return ops::gelu(t, true); }, x,
       {-0.04540230591222494, -0.15428599017485606, 0, 0.34571400982514394, 1.954597694087775}},
      {"softplus", ops::softplus, x, {0.1269280110429725, 0.4740769841801067, 0.6931471805599453, 0.9740769841801067, 2.1269280110429727}},
      {"softsign", ops::softsign, x, {-2.0 / 3, -1.0 / 3, 0, 1.0 / 3, 2.0 / 3}},
      {"swish", ops::swish, x, {-0.2384058440442351, -0.1887703343990727, 0, 0.3112296656009273, 1.7615941559557646}},
      {"silu", ops::silu, x, {-0.2384058440442351, -0.1887703343990727, 0, 0.3112296656009273, 1.7615941559557646}},
      {"log", ops::log, pos, {-1.3862943611198906, 0, 1.3862943611198906}},
      {"log1p", ops::log1p, pos, {0.22314355131420976, 0.6931471805599453, 1.6094379124341003}},
      {"sqrt", ops::sqrt, pos, {0.5, 1, 2}},
      {"rsqrt", ops::rsqrt, pos, {2, 1, 0.5}},
      {"reciprocal", ops::reciprocal, pos, {4, 1, 0.25}},
      {"floor", ops::floor, {-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.75, -2.75}, {-3, -2, -1, 0, 1, 2, 2, -3}},
      {"ceil", ops::ceil, {-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.75, -2.75}, {-2, -1, 0, 1, 2, 3, 3, -2}},
      {"round (half to even)", ops::round, {-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.75, -2.75}, {-2, -2, 0, 0, 2, 2, 3, -3}},
  };
  for (const Case& c : cases) {
    for (DType dt : kFloats) {
      INFO(c.name << " " << dt);
      Shape shape{static_cast<int64_t>(c.x.size())};
      check_close(c.fn(make(c.x, shape, dt)), dt, shape, c.expected);
      // Empty tensors keep their shape.
      check_tensor(c.fn(make({}, {0, 3}, dt)), dt, {0, 3}, {});
    }
    INFO(c.name);
    CHECK_INVALID(c.fn(make({1}, {1}, DType::Int32)), Catch::Contains("int32") && Catch::Contains("floating"));
  }
  CHECK_INVALID(ops::exp(make({1}, {1}, DType::Int64)), Catch::StartsWith("exp:") && Catch::Contains("int64"));
  CHECK_INVALID(ops::gelu(make({1}, {1}, DType::Bool)), Catch::StartsWith("gelu:") && Catch::Contains("bool"));
}

TEST_CASE("sign-carrying unary ops over floats, int32 and int64", "[ops][elementwise]") {
  struct Case {
    const char* name;
    UnaryFn fn;
    std::vector<double> expected;
  };
  const std::vector<double> x = {-7, -2, 0, 3, 8};
  const std::vector<Case> cases = {
      {"neg", ops::neg, {7, 2, 0, -3, -8}},        {"abs", ops::abs, {7, 2, 0, 3, 8}},
      {"sign", ops::sign, {-1, -1, 0, 1, 1}},      {"square", ops::square, {49, 4, 0, 9, 64}},
      {"relu", ops::relu, {0, 0, 0, 3, 8}},        {"relu6", ops::relu6, {0, 0, 0, 3, 6}},
      {"operator-", [](const Tensor& t) { return -t; }, {7, 2, 0, -3, -8}},
  };
  for (const Case& c : cases) {
    for (DType dt : kSigned) {
      INFO(c.name << " " << dt);
      check_tensor(c.fn(make(x, {5}, dt)), dt, {5}, c.expected);
      check_tensor(c.fn(make({}, {2, 0}, dt)), dt, {2, 0}, {});
    }
    INFO(c.name);
    CHECK_INVALID(c.fn(make({1}, {1}, DType::UInt8)), Catch::Contains("uint8") && Catch::Contains("int64"));
    CHECK_INVALID(c.fn(make({1}, {1}, DType::Bool)), Catch::Contains("bool"));
  }
  // Integer overflow wraps (as TF) instead of being undefined.
  int32_t lo = std::numeric_limits<int32_t>::min();
  CHECK(ops::neg(Tensor::from_vector<int32_t>({lo}, {1})).to_vector<int32_t>()[0] == lo);
  CHECK(ops::abs(Tensor::from_vector<int32_t>({lo}, {1})).to_vector<int32_t>()[0] == lo);
  CHECK(ops::square(Tensor::from_vector<int32_t>({65536}, {1})).to_vector<int32_t>()[0] == 0);
}

TEST_CASE("unary ops handle NaN, infinities and extreme inputs", "[ops][elementwise]") {
  for (DType dt : kFloats) {
    INFO(dt);
    Tensor special = make({1.5, kInf, -kInf, kNaN, 0}, {5}, dt);
    check_tensor(ops::is_finite(special), DType::Bool, {5}, {1, 0, 0, 0, 1});
    check_tensor(ops::is_finite(make({}, {0}, dt)), DType::Bool, {0}, {});
    check_tensor(ops::sign(special), dt, {5}, {1, 1, -1, kNaN, 0});
    check_tensor(ops::relu(special), dt, {5}, {1.5, kInf, 0, kNaN, 0});
    check_tensor(ops::relu6(special), dt, {5}, {1.5, 6, 0, kNaN, 0});
    check_tensor(ops::sigmoid(special), dt, {5}, {0.8175744761936437, 1, 0, kNaN, 0.5}, tolerance_for(dt),
                 tolerance_for(dt));
  }
  CHECK(std::signbit(ops::neg(Tensor::from_vector<float>({0.0f}, {1})).item<float>()));
  CHECK_INVALID(ops::is_finite(make({1}, {1}, DType::Int32)), Catch::StartsWith("is_finite:"));
  // Stable far from zero: no overflow to inf or NaN, tiny values kept (TF's softplus thresholds).
  for (DType dt : {DType::Float32, DType::Float64}) {
    INFO(dt);
    Tensor x = make({-20, -10, 10, 30, 100, 1000, -1000}, {7}, dt);
    check_tensor(ops::softplus(x), dt, {7},
                 {2.061153620314381e-09, 4.539889921686465e-05, 10.000045398899218, 30, 100, 1000, 0}, 1e-6, 0);
    check_tensor(ops::sigmoid(x), dt, {7}, {2.0611536181902037e-09, 4.5397868702434395e-05, 0.9999546021312976, 1, 1, 1, 0},
                 1e-6, 0);
  }
  check_tensor(ops::sigmoid(Tensor::from_vector<double>({-700}, {1})), DType::Float64, {1}, {9.859676543759770e-305},
               1e-9, 0);
}

TEST_CASE("float32 exp, sigmoid, tanh, log, log1p, elu, selu and softplus are within a few ulp over the floats, "
          "and each value's bits do not depend on its place", "[ops][elementwise]") {
  // Every 4099th bit pattern (about a million floats of both signs, subnormals to infinities and NaNs) in one
  // tensor, whose loop runs vectorised and in chunks over the pool; then special values.
  std::vector<float> x;
  for (uint64_t b = 0; b <= 0xffffffffu; b += 4099) x.push_back(std::bit_cast<float>(static_cast<uint32_t>(b)));
  const float inf = std::numeric_limits<float>::infinity();
  x.insert(x.end(), {3.73729f, 0.0004f, -0.0004f, 7.99881172f, -7.99881172f, 8.0f, 88.72f, 88.73f, -87.5f, -103.9f,
                     -104.5f, 5.96046e-08f, -1.0988f, 0.0f, -0.0f, inf, -inf});
  const int64_t n = static_cast<int64_t>(x.size());
  const Tensor xt = Tensor::from_vector<float>(x, {n});
  // Signed distance in ulps: float bit patterns mapped onto a line (negative floats mirrored).
  auto line = [](float v) {
    const int64_t b = std::bit_cast<int32_t>(v);
    return b < 0 ? std::numeric_limits<int32_t>::min() - b : b;
  };
  struct Case {
    const char* name;
    UnaryFn op;
    double (*reference)(double);
    int64_t ulps;
  };
  const Case cases[] = {
      {"exp", ops::exp, [](double v) { return std::exp(v); }, 1},
      {"sigmoid", ops::sigmoid, [](double v) { return 1.0 / (1.0 + std::exp(-v)); }, 2},
      {"tanh", ops::tanh, [](double v) { return std::tanh(v); }, 5},
      {"log", ops::log, [](double v) { return std::log(v); }, 1},
      {"log1p", ops::log1p, [](double v) { return std::log1p(v); }, 1},
      {"elu", ops::elu, [](double v) { return v < 0 ? std::expm1(v) : v; }, 3},
      {"selu", ops::selu,
       [](double v) {
         const double scale = 1.0507009873554804934193349852946, alpha = 1.6732632423543772848170429916717;
         return v < 0 ? scale * alpha * std::expm1(v) : scale * v;
       },
       2},
      // TF's thresholds: exp(x) below log(eps) + 2, where log1p(exp(x)) is exp(x) within 7 ulp.
      {"softplus", ops::softplus, [](double v) { return v > 30 ? v : std::log1p(std::exp(v)); }, 7},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    const std::vector<float> y = c.op(xt).to_vector<float>();
    int64_t worst = 0, misplaced = 0;  // misplaced: a value other than alone in a tensor, or NaN not kept
    for (int64_t i = 0; i < n; ++i) {
      const float xi = x[static_cast<size_t>(i)], yi = y[static_cast<size_t>(i)];
      if (std::isnan(xi)) {
        if (!std::isnan(yi)) ++misplaced;
        continue;
      }
      // Ember runs with denormals read as zero (as TF does): a subnormal input is a zero to the op and the
      // reference alike, whose results may keep the input's bits or not.
      const uint32_t bits = std::bit_cast<uint32_t>(xi);
      if ((bits & 0x7f800000u) == 0 && (bits & 0x7fffffu) != 0) continue;
      const double reference = c.reference(xi);
      if (std::isnan(reference)) {  // log of a negative number
        if (!std::isnan(yi)) ++misplaced;
        continue;
      }
      worst = std::max(worst, std::abs(line(static_cast<float>(reference)) - line(yi)));
      if (i % 997 == 0 && c.op(Tensor::from_vector<float>({xi}, {1})).item<float>() != yi) ++misplaced;
    }
    CHECK(worst <= c.ulps);
    CHECK(misplaced == 0);
  }
  const std::vector<float> t = ops::tanh(xt).to_vector<float>();
  const std::vector<float> s = ops::sigmoid(xt).to_vector<float>();
  const std::vector<float> e = ops::exp(xt).to_vector<float>();
  int64_t out_of_range = 0;  // tanh's sign not x's (-0 stays -0), |tanh| > 1, sigmoid outside [0, 1]
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) continue;
    if (std::signbit(t[i]) != std::signbit(x[i]) || std::abs(t[i]) > 1.0f || !(s[i] >= 0.0f && s[i] <= 1.0f))
      ++out_of_range;
  }
  CHECK(out_of_range == 0);
  CHECK(t[x.size() - 2] == 1.0f);  // tanh(inf)
  CHECK(t[x.size() - 1] == -1.0f);
  CHECK(e[x.size() - 2] == inf);
  CHECK(e[x.size() - 1] == 0.0f);
  CHECK(e[x.size() - 10] == inf);  // 88.73 overflows
  CHECK(s[x.size() - 1] == 0.0f);
  CHECK(s[x.size() - 2] == 1.0f);
}

TEST_CASE("float32 gelu (with its erf) stays within a few ulp of its float64 values", "[ops][elementwise]") {
  std::vector<float> x;
  for (float v = -12.0f; v <= 12.0f; v += 0.00037f) x.push_back(v);
  const int64_t n = static_cast<int64_t>(x.size());
  const std::vector<float> y = ops::gelu(Tensor::from_vector<float>(x, {n})).to_vector<float>();
  double worst = 0;  // erf within 7 ulp of its value near +-1 becomes an absolute error in 1 + erf
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i], exact = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
    worst = std::max(worst, std::abs(y[i] - exact) / std::max(1.0, std::abs(v)));
  }
  CHECK(worst <= 6e-7);
}

TEST_CASE("logical_not takes bool only", "[ops][elementwise]") {
  check_tensor(ops::logical_not(Tensor::from_vector<bool>({true, false, true}, {3})), DType::Bool, {3}, {0, 1, 0});
  CHECK_INVALID(ops::logical_not(make({1}, {1}, DType::Float32)), Catch::StartsWith("logical_not:") &&
                                                                      Catch::Contains("float32") && Catch::Contains("bool"));
}

TEST_CASE("cast converts between every pair of dtypes", "[ops][elementwise]") {
  for (DType from : kAll) {
    for (DType to : kAll) {
      INFO(from << " -> " << to);
      Tensor x = make({0, 1, 1, 0}, {2, 2}, from);
      Tensor y = ops::cast(x, to);
      check_tensor(y, to, {2, 2}, {0, 1, 1, 0});
      check_tensor(ops::cast(make({}, {0, 2}, from), to), to, {0, 2}, {});
      if (from == to) CHECK(y.is_same(x));
    }
  }
  for (DType to : kNumeric) {
    INFO("bool -> " << to);
    check_tensor(ops::cast(Tensor::from_vector<bool>({true, false}, {2}), to), to, {2}, {1, 0});
  }
}

TEST_CASE("cast from floating to integer truncates, maps NaN to 0 and saturates", "[ops][elementwise]") {
  const int32_t i32max = std::numeric_limits<int32_t>::max(), i32min = std::numeric_limits<int32_t>::min();
  for (DType from : kFloats) {
    INFO(from);
    Tensor x = make({-2.75, -0.5, 0.5, 2.75, 1e10, -1e10, kNaN, kInf, -kInf}, {9}, from);
    std::vector<int32_t> i32 = ops::cast(x, DType::Int32).to_vector<int32_t>();
    std::vector<int64_t> i64 = ops::cast(x, DType::Int64).to_vector<int64_t>();
    std::vector<uint8_t> u8 = ops::cast(x, DType::UInt8).to_vector<uint8_t>();
    std::vector<bool> b = ops::cast(x, DType::Bool).to_vector<bool>();
    CHECK(i32 == std::vector<int32_t>{-2, 0, 0, 2, i32max, i32min, 0, i32max, i32min});
    // float16 cannot hold 1e10 (it arrives as inf); the others hold it approximately.
    if (from != DType::Float16) CHECK(std::abs(static_cast<double>(i64[4]) - 1e10) <= 1e10 * 1e-2);
    CHECK(i64[0] == -2);
    CHECK(i64[6] == 0);
    CHECK(i64[7] == std::numeric_limits<int64_t>::max());
    CHECK(i64[8] == std::numeric_limits<int64_t>::min());
    CHECK(u8 == std::vector<uint8_t>{0, 0, 0, 2, 255, 0, 0, 255, 0});
    CHECK(b == std::vector<bool>{true, true, true, true, true, true, true, true, true});
  }
  // Exactly at the edges: 2^31 saturates, -2^31 is representable; 2^63 saturates.
  Tensor edges = Tensor::from_vector<double>({2147483648.0, -2147483648.0, 2147483647.0, 9223372036854775808.0}, {4});
  CHECK(ops::cast(edges, DType::Int32).to_vector<int32_t>() ==
        std::vector<int32_t>{2147483647, -2147483647 - 1, 2147483647, 2147483647});
  CHECK(ops::cast(edges, DType::Int64).to_vector<int64_t>()[3] == std::numeric_limits<int64_t>::max());
  check_tensor(ops::cast(Tensor::from_vector<float>({0.f, -0.f, 2.f}, {3}), DType::Bool), DType::Bool, {3}, {0, 0, 1});
}

TEST_CASE("cast between integers wraps; to floats rounds", "[ops][elementwise]") {
  CHECK(ops::cast(Tensor::from_vector<int32_t>({257, -1, 255}, {3}), DType::UInt8).to_vector<uint8_t>() ==
        std::vector<uint8_t>{1, 255, 255});
  CHECK(ops::cast(Tensor::from_vector<int64_t>({4294967297LL, -1}, {2}), DType::Int32).to_vector<int32_t>() ==
        std::vector<int32_t>{1, -1});
  CHECK(ops::cast(Tensor::from_vector<int32_t>({16777217}, {1}), DType::Float32).item<float>() == 16777216.0f);
  CHECK(ops::cast(Tensor::from_vector<uint8_t>({200}, {1}), DType::Int32).item<int32_t>() == 200);
  check_tensor(ops::cast(Tensor::from_vector<float>({1.0f / 3, 65504.f, 1e6f}, {3}), DType::Float16), DType::Float16, {3},
               {1.0 / 3, 65504, kInf}, 1e-3, 0);
  check_tensor(ops::cast(Tensor::from_vector<double>({1.0 / 3}, {1}), DType::BFloat16), DType::BFloat16, {1},
               {0.333984375}, 0, 0);
}

TEST_CASE("arithmetic binary ops over every numeric dtype", "[ops][elementwise]") {
  const std::vector<double> a = {6, 7, 8, 9, 10, 12}, b = {1, 2, 4, 3, 5, 6};
  struct Case {
    const char* name;
    BinaryFn fn;
    std::vector<double> expected, expected_int;
  };
  const std::vector<Case> cases = {
      {"add", ops::add, {7, 9, 12, 12, 15, 18}, {}},
      {"sub", ops::sub, {5, 5, 4, 6, 5, 6}, {}},
      {"mul", ops::mul, {6, 14, 32, 27, 50, 72}, {}},
      {"div", ops::div, {6, 3.5, 2, 3, 2, 2}, {6, 3, 2, 3, 2, 2}},
      {"floordiv", ops::floordiv, {6, 3, 2, 3, 2, 2}, {}},
      {"mod", ops::mod, {0, 1, 0, 0, 0, 0}, {}},
      {"maximum", ops::maximum, {6, 7, 8, 9, 10, 12}, {}},
      {"minimum", ops::minimum, {1, 2, 4, 3, 5, 6}, {}},
      {"operator+", [](const Tensor& x, const Tensor& y) { return x + y; }, {7, 9, 12, 12, 15, 18}, {}},
      {"operator-", [](const Tensor& x, const Tensor& y) { return x - y; }, {5, 5, 4, 6, 5, 6}, {}},
      {"operator*", [](const Tensor& x, const Tensor& y) { return x * y; }, {6, 14, 32, 27, 50, 72}, {}},
      {"operator/", [](const Tensor& x, const Tensor& y) { return x / y; }, {6, 3.5, 2, 3, 2, 2}, {6, 3, 2, 3, 2, 2}},
  };
  for (const Case& c : cases) {
    for (DType dt : kNumeric) {
      INFO(c.name << " " << dt);
      const auto& expected = !is_floating(dt) && !c.expected_int.empty() ? c.expected_int : c.expected;
      check_close(c.fn(make(a, {2, 3}, dt), make(b, {2, 3}, dt)), dt, {2, 3}, expected);
      check_tensor(c.fn(make({}, {0, 3}, dt), make({1, 2, 3}, {1, 3}, dt)), dt, {0, 3}, {});
    }
    INFO(c.name);
    CHECK_INVALID(c.fn(make({1}, {1}, DType::Bool), make({1}, {1}, DType::Bool)), Catch::Contains("bool"));
  }
  for (DType dt : kSigned) {
    INFO(dt);
    check_close(ops::squared_difference(make({1, 5, -2}, {3}, dt), make({4, 2, 2}, {3}, dt)), dt, {3}, {9, 9, 16});
    // Gradients pass where the feature is strictly positive; the feature broadcasts.
    check_close(ops::relu_grad(make({1, 2, 3, 4}, {2, 2}, dt), make({1, 0, -3, 2}, {2, 2}, dt)), dt, {2, 2},
                {1, 0, 0, 4});
    check_close(ops::relu_grad(make({1, 2, 3, 4}, {2, 2}, dt), make({-1, 5}, {2}, dt)), dt, {2, 2}, {0, 2, 0, 4});
    check_close(ops::pow(make({2, 3, -2, 5}, {4}, dt), make({10, 3, 3, 0}, {4}, dt)), dt, {4}, {1024, 27, -8, 1});
  }
  for (DType dt : kFloats) {
    INFO(dt);
    check_close(ops::pow(make({4, 9, 2}, {3}, dt), make({0.5, 0.5, -1}, {3}, dt)), dt, {3}, {2, 3, 0.5});
  }
  CHECK_INVALID(ops::pow(make({2}, {1}, DType::UInt8), make({2}, {1}, DType::UInt8)),
                Catch::StartsWith("pow:") && Catch::Contains("uint8"));
  CHECK_INVALID(ops::squared_difference(make({2}, {1}, DType::UInt8), make({2}, {1}, DType::UInt8)),
                Catch::StartsWith("squared_difference:"));
  CHECK_INVALID(ops::relu_grad(make({2}, {1}, DType::Float32), make({2}, {1}, DType::Float64)),
                Catch::StartsWith("relu_grad:"));
  for (DType dt : kFloats) {
    INFO(dt);
    // A select, not dy * (x > 0): an inactive unit passes no NaN or infinity back.
    check_close(ops::relu_grad(make({kNaN, kInf, kNaN}, {3}, dt), make({-1, 0, 1}, {3}, dt)), dt, {3}, {0, 0, kNaN});
  }
  CHECK_INVALID(ops::pow(make({2}, {1}, DType::Int32), make({-1}, {1}, DType::Int32)),
                Catch::StartsWith("pow:") && Catch::Contains("negative"));
}

TEST_CASE("integer division truncates, floordiv floors, mod takes the divisor's sign", "[ops][elementwise]") {
  for (DType dt : {DType::Int32, DType::Int64}) {
    INFO(dt);
    Tensor a = make({7, -7, 7, -7, 6}, {5}, dt), b = make({2, 2, -2, -2, 3}, {5}, dt);
    check_tensor(ops::div(a, b), dt, {5}, {3, -3, -3, 3, 2});
    check_tensor(ops::floordiv(a, b), dt, {5}, {3, -4, -4, 3, 2});
    check_tensor(ops::mod(a, b), dt, {5}, {1, 1, -1, -1, 0});
    Tensor zero = make({1, 0}, {2}, dt);
    CHECK_INVALID(ops::div(make({1, 2}, {2}, dt), zero), Catch::Equals("div: integer division by zero"));
    CHECK_INVALID(ops::floordiv(make({1, 2}, {2}, dt), zero), Catch::Equals("floordiv: integer division by zero"));
    CHECK_INVALID(ops::mod(make({1, 2}, {2}, dt), zero), Catch::Equals("mod: integer division by zero"));
    CHECK_INVALID(make({1, 2}, {2}, dt) / 0.0, Catch::Contains("division by zero"));
  }
  Tensor u = make({7, 200}, {2}, DType::UInt8), v = make({2, 7}, {2}, DType::UInt8);
  check_tensor(ops::floordiv(u, v), DType::UInt8, {2}, {3, 28});
  check_tensor(ops::mod(u, v), DType::UInt8, {2}, {1, 4});
  // INT_MIN / -1 overflows; it is defined here as wrapping (TF's CPU kernels leave it undefined).
  int32_t lo = std::numeric_limits<int32_t>::min();
  Tensor m = Tensor::from_vector<int32_t>({lo}, {1}), neg1 = Tensor::from_vector<int32_t>({-1}, {1});
  CHECK(ops::div(m, neg1).item<int32_t>() == lo);
  CHECK(ops::floordiv(m, neg1).item<int32_t>() == lo);
  CHECK(ops::mod(m, neg1).item<int32_t>() == 0);
  // Floats: floor(a / b) and floor modulo; division by zero follows IEEE.
  for (DType dt : kFloats) {
    INFO(dt);
    Tensor a = make({7, -7, 7, -7, 7.5, -7.5}, {6}, dt), b = make({2, 2, -2, -2, 2, 2}, {6}, dt);
    check_close(ops::floordiv(a, b), dt, {6}, {3, -4, -4, 3, 3, -4});
    check_close(ops::mod(a, b), dt, {6}, {1, 1, -1, -1, 1.5, 0.5});
    check_tensor(ops::div(make({1, -1, 0}, {3}, dt), make({0, 0, 0}, {3}, dt)), dt, {3}, {kInf, -kInf, kNaN});
    check_tensor(ops::mod(make({1}, {1}, dt), make({0}, {1}, dt)), dt, {1}, {kNaN});
  }
}

TEST_CASE("div_no_nan is 0 where the divisor is 0, whatever the numerator", "[ops][elementwise]") {
  const double inf = std::numeric_limits<double>::infinity();
  for (DType dt : kFloats) {
    INFO(dt);
    Tensor a = make({1, kNaN, inf, 0, 6, kNaN, -3}, {7}, dt), b = make({0, 0, 0, -0.0, 3, 2, -1.5}, {7}, dt);
    check_tensor(ops::div_no_nan(a, b), dt, {7}, {0, 0, 0, 0, 2, kNaN, 2});
    // Broadcasting, as div.
    check_tensor(ops::div_no_nan(make({1, 2, 3, 4}, {2, 2}, dt), make({0, 2}, {2}, dt)), dt, {2, 2}, {0, 1, 0, 2});
  }
  REQUIRE_THROWS_WITH(ops::div_no_nan(make({1}, {1}, DType::Int32), make({0}, {1}, DType::Int32)),
                      Catch::Contains("div_no_nan") && Catch::Contains("int32"));
}

TEST_CASE("maximum and minimum propagate NaN", "[ops][elementwise]") {
  for (DType dt : kFloats) {
    INFO(dt);
    Tensor a = make({kNaN, 1, 3}, {3}, dt), b = make({1, kNaN, 2}, {3}, dt);
    check_tensor(ops::maximum(a, b), dt, {3}, {kNaN, kNaN, 3});
    check_tensor(ops::minimum(a, b), dt, {3}, {kNaN, kNaN, 2});
  }
}

TEST_CASE("binary ops broadcast like NumPy", "[ops][elementwise]") {
  for (DType dt : kNumeric) {
    INFO(dt);
    // (2,1,3) + (4,1) -> (2,4,3): out[i,j,k] = (3i + k) + 10j.
    Tensor a = make({0, 1, 2, 3, 4, 5}, {2, 1, 3}, dt), b = make({0, 10, 20, 30}, {4, 1}, dt);
    std::vector<double> expected;
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 4; ++j)
        for (int k = 0; k < 3; ++k) expected.push_back(3 * i + k + 10 * j);
    check_tensor(ops::add(a, b), dt, {2, 4, 3}, expected);
    check_tensor(ops::add(b, a), dt, {2, 4, 3}, expected);
    // Scalar with matrix, both orders (sub is not symmetric).
    Tensor s = make({20}, {}, dt), m = make({1, 2, 3, 4, 5, 6}, {2, 3}, dt);
    check_tensor(ops::sub(s, m), dt, {2, 3}, {19, 18, 17, 16, 15, 14});
    check_tensor(ops::sub(m, make({1}, {1}, dt)), dt, {2, 3}, {0, 1, 2, 3, 4, 5});
    // Outer product (3,1) * (1,4).
    check_tensor(ops::mul(make({1, 2, 3}, {3, 1}, dt), make({1, 2, 3, 4}, {1, 4}, dt)), dt, {3, 4},
                 {1, 2, 3, 4, 2, 4, 6, 8, 3, 6, 9, 12});
    // A row vector against a matrix, and empty results.
    check_tensor(ops::maximum(m, make({2, 9, 4}, {3}, dt)), dt, {2, 3}, {2, 9, 4, 4, 9, 6});
    check_tensor(ops::add(make({}, {2, 0}, dt), s), dt, {2, 0}, {});
    check_tensor(ops::add(make({}, {0, 1}, dt), make({1, 2}, {2}, dt)), dt, {0, 2}, {});
  }
  CHECK_INVALID(ops::add(make({1, 2, 3, 4, 5, 6}, {2, 3}, DType::Float32), make({1, 2, 3, 4}, {4}, DType::Float32)),
                Catch::StartsWith("add:") && Catch::Contains("(2, 3)") && Catch::Contains("(4,)"));
  CHECK_INVALID(ops::add(make({1}, {1}, DType::Float32), make({1}, {1}, DType::Int32)),
                Catch::Equals("add: dtypes float32 and int32 differ (TF requires both inputs of an op to share a "
                              "dtype; use ops::cast)"));
  CHECK_INVALID(ops::less(make({1}, {1}, DType::Float64), make({1}, {1}, DType::Float16)),
                Catch::StartsWith("less:") && Catch::Contains("float64") && Catch::Contains("float16"));
}

TEST_CASE("broadcasting over many dimensions and large tensors", "[ops][elementwise]") {
  // (3,1,4,1,2) - (5,1,3,1): rank 5, no two dimensions collapse, short inner runs.
  std::vector<double> av(24), bv(15);
  for (int i = 0; i < 24; ++i) av[i] = i;
  for (int i = 0; i < 15; ++i) bv[i] = 100 * i;
  Tensor a = make(av, {3, 1, 4, 1, 2}, DType::Float64), b = make(bv, {5, 1, 3, 1}, DType::Float64);
  std::vector<double> expected;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j)
      for (int k = 0; k < 4; ++k)
        for (int l = 0; l < 3; ++l)
          for (int m = 0; m < 2; ++m) expected.push_back((i * 8 + k * 2 + m) - 100 * (j * 3 + l));
  check_tensor(ops::sub(a, b), DType::Float64, {3, 5, 4, 3, 2}, expected);
  // Large enough for the thread pool: (600, 1) * (1, 500) and a flat add and relu.
  std::vector<double> col(600), row(500);
  for (int i = 0; i < 600; ++i) col[i] = i;
  for (int j = 0; j < 500; ++j) row[j] = j - 250;
  Tensor outer = ops::mul(make(col, {600, 1}, DType::Float32), make(row, {1, 500}, DType::Float32));
  std::vector<float> got = outer.to_vector<float>();
  bool all_ok = true;
  for (int i = 0; i < 600; ++i)
    for (int j = 0; j < 500; ++j) all_ok &= got[i * 500 + j] == static_cast<float>(i * (j - 250));
  CHECK(all_ok);
  std::vector<float> big(200000);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(static_cast<int>(i % 1000) - 500);
  Tensor x = Tensor::from_vector<float>(big, {200000});
  std::vector<float> r = ops::relu(x + x).to_vector<float>();
  all_ok = true;
  for (size_t i = 0; i < big.size(); ++i) all_ok &= r[i] == std::max(0.f, 2 * big[i]);
  CHECK(all_ok);
  std::vector<float> r2 = (x.view({200, 1000}) + Tensor::from_vector<float>(std::vector<float>(1000, 1.f), {1000})).to_vector<float>();
  all_ok = true;
  for (size_t i = 0; i < big.size(); ++i) all_ok &= r2[i] == big[i] + 1;
  CHECK(all_ok);
  // General path in parallel: (200,1,1000) + (1,8,1), out[i,j,k] = x[i*1000+k] + j.
  Tensor r3 = ops::add(x.view({200, 1, 1000}), Tensor::from_vector<float>({0, 1, 2, 3, 4, 5, 6, 7}, {1, 8, 1}));
  REQUIRE(r3.shape() == Shape{200, 8, 1000});
  std::vector<float> v3 = r3.to_vector<float>();
  all_ok = true;
  for (int i = 0; i < 200; ++i)
    for (int j = 0; j < 8; ++j)
      for (int k = 0; k < 1000; ++k) all_ok &= v3[(i * 8 + j) * 1000 + k] == big[i * 1000 + k] + j;
  CHECK(all_ok);
}

TEST_CASE("comparisons output bool and broadcast", "[ops][elementwise]") {
  struct Case {
    const char* name;
    BinaryFn fn;
    std::vector<double> expected;
  };
  const std::vector<Case> cases = {
      {"equal", ops::equal, {0, 1, 0}},         {"not_equal", ops::not_equal, {1, 0, 1}},
      {"less", ops::less, {1, 0, 0}},           {"less_equal", ops::less_equal, {1, 1, 0}},
      {"greater", ops::greater, {0, 0, 1}},     {"greater_equal", ops::greater_equal, {0, 1, 1}},
  };
  for (const Case& c : cases) {
    for (DType dt : kNumeric) {
      INFO(c.name << " " << dt);
      check_tensor(c.fn(make({1, 2, 3}, {3}, dt), make({2}, {}, dt)), DType::Bool, {3}, c.expected);
      check_tensor(c.fn(make({}, {0}, dt), make({2}, {1}, dt)), DType::Bool, {0}, {});
    }
  }
  // (3,1) against (1,3): out[i,j] = a[i] < b[j].
  check_tensor(ops::less(make({1, 2, 3}, {3, 1}, DType::Int32), make({1, 2, 3}, {1, 3}, DType::Int32)), DType::Bool,
               {3, 3}, {0, 1, 1, 0, 0, 1, 0, 0, 0});
  Tensor nan = make({kNaN}, {1}, DType::Float32);
  check_tensor(ops::equal(nan, nan), DType::Bool, {1}, {0});
  check_tensor(ops::not_equal(nan, nan), DType::Bool, {1}, {1});
  check_tensor(ops::less(nan, make({1}, {1}, DType::Float32)), DType::Bool, {1}, {0});
  Tensor t = Tensor::from_vector<bool>({true, false}, {2}), f = Tensor::from_vector<bool>({true, true}, {2});
  check_tensor(ops::equal(t, f), DType::Bool, {2}, {1, 0});
  check_tensor(ops::not_equal(t, f), DType::Bool, {2}, {0, 1});
  CHECK_INVALID(ops::less(t, f), Catch::StartsWith("less:") && Catch::Contains("bool"));
}

TEST_CASE("logical_and and logical_or take bool and broadcast", "[ops][elementwise]") {
  Tensor a = Tensor::from_vector<bool>({true, false}, {2, 1}), b = Tensor::from_vector<bool>({true, false}, {1, 2});
  check_tensor(ops::logical_and(a, b), DType::Bool, {2, 2}, {1, 0, 0, 0});
  check_tensor(ops::logical_or(a, b), DType::Bool, {2, 2}, {1, 1, 1, 0});
  CHECK_INVALID(ops::logical_and(make({1}, {1}, DType::Int32), make({1}, {1}, DType::Int32)),
                Catch::StartsWith("logical_and:") && Catch::Contains("int32"));
  CHECK_INVALID(ops::logical_or(a, make({1}, {1}, DType::Float32)),
                Catch::StartsWith("logical_or:") && Catch::Contains("float32"));
}

TEST_CASE("where selects with three-way broadcasting", "[ops][elementwise]") {
  Tensor cond = Tensor::from_vector<bool>({true, false}, {2, 1});
  for (DType dt : kAll) {
    INFO(dt);
    Tensor a = make({1, 0, 1}, {1, 3}, dt), b = make({0}, {}, dt);
    check_tensor(ops::where(cond, a, b), dt, {2, 3}, {1, 0, 1, 0, 0, 0});
    Tensor c2 = Tensor::from_vector<bool>({true, false, false, true}, {4});
    check_tensor(ops::where(c2, make({1, 1, 1, 1}, {4}, dt), make({0, 0, 0, 0}, {4}, dt)), dt, {4}, {1, 0, 0, 1});
  }
  check_close(ops::where(cond, make({1.5, 2.5}, {2}, DType::BFloat16), make({-1}, {1, 1}, DType::BFloat16)),
              DType::BFloat16, {2, 2}, {1.5, 2.5, -1, -1});
  check_tensor(ops::where(Tensor::from_vector<bool>({}, {0, 1}), make({1}, {1}, DType::Float32), make({2}, {1}, DType::Float32)),
               DType::Float32, {0, 1}, {});
  CHECK_INVALID(ops::where(make({1}, {1}, DType::Float32), make({1}, {1}, DType::Float32), make({1}, {1}, DType::Float32)),
                Catch::StartsWith("where:") && Catch::Contains("bool") && Catch::Contains("float32"));
  CHECK_INVALID(ops::where(cond, make({1}, {1}, DType::Float32), make({1}, {1}, DType::Int64)),
                Catch::StartsWith("where:") && Catch::Contains("float32") && Catch::Contains("int64"));
  CHECK_INVALID(ops::where(cond, make({1, 2, 3}, {3}, DType::Float32), make({1, 2}, {2}, DType::Float32)),
                Catch::StartsWith("where:") && Catch::Contains("(2,)"));
}

TEST_CASE("clip_by_value clamps with bounds broadcast to x", "[ops][elementwise]") {
  for (DType dt : kNumeric) {
    INFO(dt);
    Tensor x = make({0, 2, 5, 9, 1, 7}, {2, 3}, dt);
    check_tensor(ops::clip_by_value(x, 1, 6), dt, {2, 3}, {1, 2, 5, 6, 1, 6});
    check_tensor(ops::clip_by_value(x, make({0, 3, 6}, {3}, dt), make({8}, {}, dt)), dt, {2, 3}, {0, 3, 6, 8, 3, 7});
    check_tensor(ops::clip_by_value(make({}, {0, 3}, dt), 1, 2), dt, {0, 3}, {});
  }
  for (DType dt : kFloats) {
    INFO(dt);
    check_close(ops::clip_by_value(make({-5, 0.25, kNaN, kInf}, {4}, dt), -1, 1), dt, {4}, {-1, 0.25, kNaN, 1});
    // lo > hi: TF computes maximum(minimum(x, hi), lo), so lo wins.
    check_close(ops::clip_by_value(make({0, 5, 10}, {3}, dt), 6, 4), dt, {3}, {6, 6, 6});
  }
  Tensor x = make({1, 2, 3}, {3}, DType::Float32);
  CHECK_INVALID(ops::clip_by_value(x, make({0, 0, 0, 0, 0, 0}, {2, 3}, DType::Float32), make({1}, {}, DType::Float32)),
                Catch::StartsWith("clip_by_value:") && Catch::Contains("(2, 3)") && Catch::Contains("(3,)"));
  CHECK_INVALID(ops::clip_by_value(x, make({0}, {}, DType::Float64), make({1}, {}, DType::Float32)),
                Catch::StartsWith("clip_by_value:") && Catch::Contains("float64"));
  CHECK_INVALID(ops::clip_by_value(Tensor::from_vector<bool>({true}, {1}), 0, 1), Catch::StartsWith("clip_by_value:"));
}

TEST_CASE("operators with C++ numbers keep the tensor's dtype", "[ops][elementwise]") {
  Tensor i = make({1, 2, 3}, {3}, DType::Int32);
  check_tensor(i + 2, DType::Int32, {3}, {3, 4, 5});
  check_tensor(2 + i, DType::Int32, {3}, {3, 4, 5});
  check_tensor(10 - i, DType::Int32, {3}, {9, 8, 7});
  check_tensor(i - 1, DType::Int32, {3}, {0, 1, 2});
  check_tensor(i * 3, DType::Int32, {3}, {3, 6, 9});
  check_tensor(i * 0.5, DType::Int32, {3}, {0, 0, 0});  // 0.5 becomes int32 0, as TF converts the Python scalar
  check_tensor(i / 2, DType::Int32, {3}, {0, 1, 1});
  check_tensor(7 / i, DType::Int32, {3}, {7, 3, 2});
  Tensor f = make({1, 2, 4}, {3}, DType::Float32);
  check_tensor(f * 0.5, DType::Float32, {3}, {0.5, 1, 2});
  check_tensor(1.0 / f, DType::Float32, {3}, {1, 0.5, 0.25});
  check_tensor(f / 4.0, DType::Float32, {3}, {0.25, 0.5, 1});
  check_tensor(-f + f * f, DType::Float32, {3}, {0, 2, 12});
  Tensor h = make({1, 2}, {2}, DType::Float16);
  check_tensor(h + 1.5, DType::Float16, {2}, {2.5, 3.5});
  check_tensor(2.0 * make({1.5}, {1}, DType::BFloat16), DType::BFloat16, {1}, {3});
  check_tensor(make({250}, {1}, DType::UInt8) + 10, DType::UInt8, {1}, {4});  // wraps, as uint8 arithmetic does
  CHECK_INVALID(f + i, Catch::StartsWith("add:") && Catch::Contains("float32") && Catch::Contains("int32"));
}
