// Backend consistency (ggml's test-backend-ops): every op of op_list.def runs sample cases on the CPU and on
// cuda:0 (same inputs, made on the CPU and copied) and the outputs agree within a per-dtype tolerance; the
// tape gradients of reduce_sum(op(x) * w) agree too. Uniform random ops agree bit for bit, normal ones to a few ulp (CUDA's logf/sinf). The [cuda] cases skip
// without a GPU; the untagged ones check the case table itself (every op has cases, each case runs its op
// on the CPU for every dtype the CPU kernel takes) and the CUDA kernel registrations, everywhere.
#include <catch2/catch.hpp>
#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "framework/ember.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/op.h"
#include "tests/support/custom_test_ops.h"
#include "tests/support/op_sections.h"
#include "tests/support/tensor_testing.h"

using namespace ember;

namespace {

using Inputs = std::vector<Tensor>;
using Outputs = std::vector<Tensor>;
// The op call: CPU or GPU inputs and the case's dtype (creation ops take it as their output dtype).
using Fn = std::function<Outputs(const Inputs&, DType)>;
// Inputs made on the CPU for a dtype.
using Gen = std::function<Inputs(DType)>;

constexpr Device kCpu = Device::cpu();
constexpr Device kGpu = Device::cuda(0);
const std::vector<DType>& kAll = testing::kAllDTypes;
const std::vector<DType> kFloats = testing::kFloatDTypes;

bool has_gpu() { return device_count(DeviceType::CUDA) > 0; }

// ------------------------------------------------------------------------------------------------- inputs

// Where a case's values lie. Floats: uniform in [lo, hi) (on a grid of `step` when step > 0, exact in every
// float dtype and full of ties); integers: whole numbers in [lo, hi] (UInt8 from max(lo, 0)); Bool: random
// unless lo >= 1 (all true) or hi <= 0 (all false). nonzero keeps magnitudes >= 0.2 (integers >= 1).
struct Domain {
  double lo = -2, hi = 2;
  bool nonzero = false;
  double step = 0;
};
const Domain kAny{};
const Domain kPos{0.2, 3};
const Domain kNonZero{-2, 2, true};
const Domain kGrid{-2, 2, false, 0.5};
// Sums of any number (up to 2^20) of these are exact in float32 whatever the order: the reductions' large cases.
const Domain kExact{-1, 1, false, 0.125};
const Domain kSigns{-1, 1, true, 1};  // +-1: products stay exact

// Uniform [0, 1) float64 values from a seeded Philox stream that starts afresh on each call (the global
// generator's state is set aside meanwhile): the same seed gives the same values whatever ran before. The
// values are shaped with CPU ops (the library is optimised, these tests are not).
Tensor uniform01(const Shape& shape, uint64_t seed) {
  const random::GeneratorState saved = random::get_global_generator_state();
  random::set_global_generator_state({});
  Tensor u = random::uniform(shape, {.dtype = DType::Float64, .seed = seed});
  random::set_global_generator_state(saved);
  return u;
}

// A CPU tensor of `shape` and dtype dt with values from the domain; the same every run for a seed.
Tensor make(const Shape& shape, DType dt, uint64_t seed, const Domain& d = kAny) {
  DeviceScope on(kCpu);
  const Tensor u = uniform01(shape, seed);
  auto negative = [&] { return ops::less(uniform01(shape, seed ^ 0x5bd1e995ull), Tensor::scalar<double>(0.5)); };
  auto scalar = [](double v) { return Tensor::scalar<double>(v); };
  Tensor v;
  if (dt == DType::Bool) {
    v = d.lo >= 1 ? ops::ones(shape, DType::Float64)
        : d.hi <= 0 ? ops::zeros(shape, DType::Float64)
                    : ops::cast(ops::less(u, scalar(0.5)), DType::Float64);
  } else if (is_integer(dt)) {
    const double lo = std::ceil(dt == DType::UInt8 ? std::max(d.lo, 0.0) : d.lo), hi = std::floor(d.hi);
    v = ops::minimum(ops::floor(u * (hi - lo + 1) + lo), scalar(hi));
    if (d.nonzero)
      v = ops::where(ops::equal(v, scalar(0)), lo < 0 ? ops::where(negative(), scalar(-1), scalar(1)) : scalar(1), v);
  } else if (d.step > 0) {
    v = ops::round((u * (d.hi - d.lo) + d.lo) / d.step) * d.step;
    if (d.nonzero) v = ops::where(ops::equal(v, scalar(0)), ops::where(negative(), scalar(-d.step), scalar(d.step)), v);
  } else if (d.nonzero) {
    const double top = std::max(std::abs(d.lo), std::abs(d.hi));
    const Tensor mag = u * (top - 0.2) + 0.2;
    v = d.lo < 0 ? ops::where(negative(), -mag, mag) : mag;
  } else {
    v = u * (d.hi - d.lo) + d.lo;
  }
  return dt == DType::Float64 ? v : ops::cast(v, dt);
}

// A CPU tensor holding these values (converted to dt).
Tensor consts(const std::vector<double>& v, const Shape& shape, DType dt) {
  DeviceScope on(kCpu);
  Tensor t = Tensor::from_vector<double>(v, shape, kCpu);
  return dt == DType::Float64 ? t : ops::cast(t, dt);
}

Tensor i64(const std::vector<int64_t>& v, const Shape& shape) { return Tensor::from_vector<int64_t>(v, shape, kCpu); }

// Zeros, infinities, NaN, halves (rounding), numbers past float16's range; `reversed` pairs each with another.
Tensor specials(DType dt, bool reversed = false) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> v = {0.0, -0.0, 1, -1, 0.5, -0.5, 2.5, -3.5, inf, -inf, nan, 1e30, -1e30, 1e-30, 70000, 88.5, -100};
  if (reversed) std::reverse(v.begin(), v.end());
  return consts(v, {17}, dt);
}

// ------------------------------------------------------------------------------------------------- cases

struct Case {
  std::string name;
  Gen inputs;
  Fn fn;
  std::vector<DType> dtypes = kAll;  // tried; those whose key dtype the CPU kernel does not take are skipped
  double tol = 1;                    // scales the dtype's tolerance
  bool grad = true;                  // compare tape gradients too (differentiable ops, floating inputs)
  bool bitwise = false;              // exact bits (random ops)
  bool per_element = false;          // judge each element by its own size, not the output's largest (special values)
};
using Table = std::map<OpId, std::vector<Case>>;

Fn unary_fn(std::function<Tensor(const Tensor&)> f) {
  return [f](const Inputs& in, DType) { return Outputs{f(in[0])}; };
}
Fn binary_fn(std::function<Tensor(const Tensor&, const Tensor&)> f) {
  return [f](const Inputs& in, DType) { return Outputs{f(in[0], in[1])}; };
}
std::string str(const Shape& s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

// Elementwise shapes: small, scalar, empty, odd sizes past a block, and a row view at an unaligned offset.
void add_unary(Table& t, OpId op, std::function<Tensor(const Tensor&)> f, Domain d, bool with_specials = true,
               std::vector<DType> dtypes = kAll) {
  auto& cases = t[op];
  const uint64_t seed = 100;
  for (const Shape& s : std::vector<Shape>{{3, 5}, {}, {0}, {0, 4}, {1031, 67}})
    cases.push_back({str(s), [=](DType dt) { return Inputs{make(s, dt, seed, d)}; }, unary_fn(f), dtypes});
  cases.push_back({"row view [5,13] of [9,13]", [=](DType dt) { return Inputs{make({9, 13}, dt, seed, d)}; },
                   [f](const Inputs& in, DType) { return Outputs{f(in[0].slice_rows(2, 7))}; }, dtypes, 1, false});
  if (with_specials)
    cases.push_back({"special values", [](DType dt) { return Inputs{specials(dt)}; }, unary_fn(f), kFloats, 1, false, false, true});
}

// Broadcasting pairs, scalars, empty, large odd shapes, and a row view.
void add_binary(Table& t, OpId op, std::function<Tensor(const Tensor&, const Tensor&)> f, Domain da, Domain db,
                std::vector<DType> dtypes = kAll) {
  auto& cases = t[op];
  const uint64_t seed = 200;
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{2, 3}, {2, 3}}, {{2, 3}, {3}},         {{3}, {2, 3}},     {{2, 1}, {1, 3}},      {{2, 3}, {}},
      {{}, {2, 3}},     {{}, {}},               {{0, 3}, {3}},     {{4, 1, 3}, {2, 3}},   {{517, 257}, {257}},
      {{517, 1}, {1, 257}}, {{65539}, {65539}}};
  for (const auto& [sa, sb] : shapes)
    cases.push_back({str(sa) + " with " + str(sb),
                     [=, sa = sa, sb = sb](DType dt) { return Inputs{make(sa, dt, seed, da), make(sb, dt, seed + 1, db)}; },
                     binary_fn(f), dtypes});
  cases.push_back({"row views [4,13]",
                   [=](DType dt) { return Inputs{make({9, 13}, dt, seed, da), make({7, 13}, dt, seed + 1, db)}; },
                   [f](const Inputs& in, DType) { return Outputs{f(in[0].slice_rows(3, 7), in[1].slice_rows(1, 5))}; },
                   dtypes, 1, false});
}

void add_elementwise(Table& t) {
  add_unary(t, OpId::neg, [](const Tensor& x) { return ops::neg(x); }, kAny);
  add_unary(t, OpId::abs, [](const Tensor& x) { return ops::abs(x); }, kNonZero);
  add_unary(t, OpId::sign, [](const Tensor& x) { return ops::sign(x); }, kGrid);
  add_unary(t, OpId::exp, [](const Tensor& x) { return ops::exp(x); }, kAny);
  add_unary(t, OpId::log, [](const Tensor& x) { return ops::log(x); }, kPos);
  add_unary(t, OpId::log1p, [](const Tensor& x) { return ops::log1p(x); }, Domain{-0.6, 1.5});
  add_unary(t, OpId::sqrt, [](const Tensor& x) { return ops::sqrt(x); }, kPos);
  add_unary(t, OpId::rsqrt, [](const Tensor& x) { return ops::rsqrt(x); }, kPos);
  add_unary(t, OpId::square, [](const Tensor& x) { return ops::square(x); }, kAny);
  add_unary(t, OpId::reciprocal, [](const Tensor& x) { return ops::reciprocal(x); }, kNonZero);
  add_unary(t, OpId::sin, [](const Tensor& x) { return ops::sin(x); }, Domain{-4, 4});
  add_unary(t, OpId::cos, [](const Tensor& x) { return ops::cos(x); }, Domain{-4, 4});
  add_unary(t, OpId::tanh, [](const Tensor& x) { return ops::tanh(x); }, Domain{-4, 4});
  add_unary(t, OpId::sigmoid, [](const Tensor& x) { return ops::sigmoid(x); }, Domain{-6, 6});
  add_unary(t, OpId::relu, [](const Tensor& x) { return ops::relu(x); }, kNonZero);
  add_unary(t, OpId::relu6, [](const Tensor& x) { return ops::relu6(x); }, Domain{-2, 8, true});
  add_unary(t, OpId::elu, [](const Tensor& x) { return ops::elu(x); }, kNonZero);
  add_unary(t, OpId::selu, [](const Tensor& x) { return ops::selu(x); }, kNonZero);
  add_unary(t, OpId::gelu, [](const Tensor& x) { return ops::gelu(x); }, Domain{-4, 4});
  t[OpId::gelu].push_back({"approximate [33,65]", [](DType dt) { return Inputs{make({33, 65}, dt, 31, Domain{-4, 4})}; },
                           unary_fn([](const Tensor& x) { return ops::gelu(x, true); }), kFloats});
  add_unary(t, OpId::softplus, [](const Tensor& x) { return ops::softplus(x); }, Domain{-25, 25});
  add_unary(t, OpId::softsign, [](const Tensor& x) { return ops::softsign(x); }, kAny);
  add_unary(t, OpId::swish, [](const Tensor& x) { return ops::swish(x); }, Domain{-6, 6});
  add_unary(t, OpId::floor, [](const Tensor& x) { return ops::floor(x); }, Domain{-4, 4, false, 0.25});
  add_unary(t, OpId::ceil, [](const Tensor& x) { return ops::ceil(x); }, Domain{-4, 4, false, 0.25});
  add_unary(t, OpId::round, [](const Tensor& x) { return ops::round(x); }, Domain{-4, 4, false, 0.25});
  add_unary(t, OpId::is_finite, [](const Tensor& x) { return ops::is_finite(x); }, kAny);
  add_unary(t, OpId::logical_not, [](const Tensor& x) { return ops::logical_not(x); }, kAny, false);

  // cast: every source dtype to every target, in ranges each target holds (no UB conversions).
  for (DType to : kAll) {
    const Domain d = to == DType::UInt8 ? Domain{0, 200} : to == DType::Bool ? Domain{-1, 1, false, 0.5}
                     : is_integer(to)   ? Domain{-100, 100}
                                        : Domain{-300, 300};
    auto f = [to](const Tensor& x) { return ops::cast(x, to); };
    std::vector<DType> from;  // a cast to its own dtype runs no op
    for (DType dt : kAll)
      if (dt != to) from.push_back(dt);
    auto& cases = t[OpId::cast];
    const std::string name = std::string("to ") + dtype_name(to);
    for (const Shape& s : std::vector<Shape>{{3, 5}, {}, {0}, {1031, 67}})
      cases.push_back({name + " " + str(s), [=](DType dt) { return Inputs{make(s, dt, 300 + s.num_elements(), d)}; },
                       unary_fn(f), from});
    std::vector<DType> float_from;
    for (DType dt : kFloats)
      if (dt != to) float_from.push_back(dt);
    if (is_floating(to))
      cases.push_back({name + " special values", [](DType dt) { return Inputs{specials(dt)}; }, unary_fn(f), float_from, 1,
                       false, false, true});
  }

  auto bin = [&](OpId op, Tensor (*f)(const Tensor&, const Tensor&), Domain da, Domain db) {
    add_binary(t, op, f, da, db);
  };
  bin(OpId::add, &ops::add, kAny, kAny);
  bin(OpId::sub, &ops::sub, kAny, kAny);
  bin(OpId::mul, &ops::mul, kAny, kAny);
  bin(OpId::div, &ops::div, Domain{-9, 9}, kNonZero);  // integers: truncating, never by zero
  bin(OpId::div_no_nan, &ops::div_no_nan, kAny, kNonZero);
  t[OpId::div_no_nan].push_back({"zero divisors, NaN and infinite numerators",
                                 [](DType dt) {
                                   const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
                                   return Inputs{make(Shape{6}, dt, 45, kAny) * ops::cast(Tensor::from_vector<double>({1, nan, inf, 1, nan, -inf}, {6}), dt),
                                                 ops::cast(Tensor::from_vector<double>({0, 0, 0, 2, 2, -0.5}, {6}), dt)};
                                 },
                                 binary_fn(&ops::div_no_nan), kFloats, 1, false, false, true});
  bin(OpId::floordiv, &ops::floordiv, Domain{-9, 9}, kNonZero);
  bin(OpId::mod, &ops::mod, Domain{-9, 9}, kNonZero);
  bin(OpId::pow, &ops::pow, Domain{0.5, 2}, Domain{0, 3});  // integers: exponents >= 0
  t[OpId::pow].push_back({"negative exponents [7,9]",
                          [](DType dt) { return Inputs{make({7, 9}, dt, 41, Domain{0.5, 2}), make({7, 9}, dt, 42, kAny)}; },
                          binary_fn(&ops::pow), kFloats});
  bin(OpId::maximum, &ops::maximum, kGrid, kGrid);  // ties: both backends must pick alike
  bin(OpId::minimum, &ops::minimum, kGrid, kGrid);
  bin(OpId::squared_difference, &ops::squared_difference, kAny, kAny);
  bin(OpId::relu_grad, &ops::relu_grad, kAny, kGrid);  // features on a grid: zeros, the kink, included
  for (OpId op : {OpId::equal, OpId::not_equal, OpId::less, OpId::less_equal, OpId::greater, OpId::greater_equal})
    add_binary(t, op,
               op == OpId::equal       ? &ops::equal
               : op == OpId::not_equal ? &ops::not_equal
               : op == OpId::less      ? &ops::less
               : op == OpId::less_equal ? &ops::less_equal
               : op == OpId::greater   ? &ops::greater
                                       : &ops::greater_equal,
               kGrid, kGrid);
  // NaN compares unequal everywhere.
  for (OpId op : {OpId::equal, OpId::less_equal, OpId::maximum})
    t[op].push_back({"special values", [](DType dt) { return Inputs{specials(dt), specials(dt, true)}; },
                     binary_fn(op == OpId::equal ? &ops::equal : op == OpId::less_equal ? &ops::less_equal : &ops::maximum),
                     kFloats, 1, false, false, true});
  add_binary(t, OpId::logical_and, &ops::logical_and, kAny, kAny, {DType::Bool});
  add_binary(t, OpId::logical_or, &ops::logical_or, kAny, kAny, {DType::Bool});

  // where: the dispatch key is the bool condition; the branches take each dtype.
  auto& w = t[OpId::where];
  const std::vector<std::tuple<Shape, Shape, Shape>> wshapes = {{{2, 3}, {2, 3}, {3}},     {{3}, {2, 1}, {}},
                                                                {{}, {2, 3}, {2, 3}},      {{0, 3}, {0, 3}, {3}},
                                                                {{513, 129}, {513, 129}, {129}}};
  for (const auto& [sc, sa, sb] : wshapes)
    w.push_back({"cond " + str(sc) + ", a " + str(sa) + ", b " + str(sb),
                 [sc = sc, sa = sa, sb = sb](DType dt) {
                   return Inputs{make(sc, DType::Bool, 61), make(sa, dt, 62), make(sb, dt, 63)};
                 },
                 [](const Inputs& in, DType) { return Outputs{ops::where(in[0], in[1], in[2])}; }});

  auto& c = t[OpId::clip_by_value];
  c.push_back({"x [2,3], lo [], hi [3]",
               [](DType dt) { return Inputs{make({2, 3}, dt, 71, kGrid), consts({0.5}, {}, dt), consts({1.5, 0.75, 2.5}, {3}, dt)}; },
               [](const Inputs& in, DType) { return Outputs{ops::clip_by_value(in[0], in[1], in[2])}; }});
  c.push_back({"x [1031,67], constant bounds", [](DType dt) { return Inputs{make({1031, 67}, dt, 72, kAny)}; },
               unary_fn([](const Tensor& x) { return ops::clip_by_value(x, 0.5, 1.5); })});
  c.push_back({"x [0], constant bounds", [](DType dt) { return Inputs{make({0}, dt, 73)}; },
               unary_fn([](const Tensor& x) { return ops::clip_by_value(x, 0.5, 1.5); })});
}

void add_reduce(Table& t) {
  using R = Tensor (*)(const Tensor&, ops::Axes, bool);
  auto add = [&](OpId op, R r, Domain d, Domain large, std::vector<DType> dtypes) {
    auto& cases = t[op];
    const uint64_t seed = 400;
    auto reduce = [r](ops::Axes ax, bool keep) { return unary_fn([r, ax, keep](const Tensor& x) { return r(x, ax, keep); }); };
    const std::vector<std::tuple<std::string, ops::Axes, bool>> axes = {
        {"all", ops::Axes{}, false},         {"axis 1", ops::Axes{1}, false},
        {"axes {0,2} keepdims", ops::Axes{0, 2}, true}, {"axis -1", ops::Axes{-1}, false},
        {"all keepdims", ops::Axes{}, true}, {"no axes", ops::Axes(std::vector<int64_t>{}), false}};
    for (const auto& [name, ax, keep] : axes)
      cases.push_back({"[2,3,4] " + name, [=](DType dt) { return Inputs{make({2, 3, 4}, dt, seed, d)}; }, reduce(ax, keep), dtypes});
    cases.push_back({"scalar", [=](DType dt) { return Inputs{make({}, dt, seed, d)}; }, reduce({}, false), dtypes});
    // Empty reductions give the identity (an integer mean of nothing would divide by zero: floats only).
    const std::vector<DType> empty_dtypes = op == OpId::reduce_mean ? kFloats : dtypes;
    cases.push_back({"[0,3] axis 0", [=](DType dt) { return Inputs{make({0, 3}, dt, seed, d)}; }, reduce({0}, false), empty_dtypes});
    cases.push_back({"[3,0] axis 1", [=](DType dt) { return Inputs{make({3, 0}, dt, seed, d)}; }, reduce({1}, false), empty_dtypes});
    cases.push_back({"[0] all", [=](DType dt) { return Inputs{make({0}, dt, seed, d)}; }, reduce({}, false), empty_dtypes});
    // Large: values whose sums are exact in any order, so the tolerance need not cover the summation order.
    cases.push_back({"[2^20] all", [=](DType dt) { return Inputs{make({1 << 20}, dt, seed, large)}; }, reduce({}, false), dtypes});
    cases.push_back({"[1024,1024] axis 0", [=](DType dt) { return Inputs{make({1024, 1024}, dt, seed, large)}; },
                     reduce({0}, false), dtypes});
    cases.push_back({"[1024,1024] axis 1", [=](DType dt) { return Inputs{make({1024, 1024}, dt, seed, large)}; },
                     reduce({1}, false), dtypes});
    cases.push_back({"[3,1025,129] axes {0,2}", [=](DType dt) { return Inputs{make({3, 1025, 129}, dt, seed, large)}; },
                     reduce({0, 2}, false), dtypes});
    cases.push_back({"[1000,1001] axis 1, random values", [=](DType dt) { return Inputs{make({1000, 1001}, dt, seed, d)}; },
                     reduce({1}, false), dtypes, 4});
  };
  add(OpId::reduce_sum, &ops::reduce_sum, kAny, kExact, kAll);
  add(OpId::reduce_mean, &ops::reduce_mean, kAny, kExact, kAll);
  add(OpId::reduce_max, &ops::reduce_max, kAny, kExact, kAll);
  add(OpId::reduce_min, &ops::reduce_min, kAny, kExact, kAll);
  add(OpId::reduce_prod, &ops::reduce_prod, Domain{0.5, 1.5}, kSigns, kAll);
  // NaN and infinities propagate alike.
  for (const auto& [op, r] : std::vector<std::pair<OpId, R>>{
           {OpId::reduce_max, &ops::reduce_max}, {OpId::reduce_min, &ops::reduce_min}, {OpId::reduce_sum, &ops::reduce_sum}})
    t[op].push_back({"special values", [](DType dt) { return Inputs{specials(dt)}; },
                     unary_fn([r = r](const Tensor& x) { return r(x, {}, false); }), kFloats, 1, false, false, true});
  add(OpId::reduce_all, &ops::reduce_all, kAny, kAny, {DType::Bool});
  add(OpId::reduce_any, &ops::reduce_any, kAny, kAny, {DType::Bool});
  // All true / all false: the answers that need every element read.
  t[OpId::reduce_all].push_back({"[2^20] all true", [](DType dt) { return Inputs{make({1 << 20}, dt, 1, Domain{1, 1})}; },
                                 unary_fn([](const Tensor& x) { return ops::reduce_all(x); })});
  t[OpId::reduce_any].push_back({"[2^20] all false", [](DType dt) { return Inputs{make({1 << 20}, dt, 1, Domain{0, 0})}; },
                                 unary_fn([](const Tensor& x) { return ops::reduce_any(x); })});

  // argmax / argmin: grid values, so ties must resolve to the first index on both backends.
  for (OpId op : {OpId::argmax, OpId::argmin}) {
    auto arg = [op](int64_t axis, DType out) {
      return unary_fn([op, axis, out](const Tensor& x) {
        return op == OpId::argmax ? ops::argmax(x, axis, out) : ops::argmin(x, axis, out);
      });
    };
    auto& cases = t[op];
    cases.push_back({"[4,5] axis 0", [](DType dt) { return Inputs{make({4, 5}, dt, 81, kGrid)}; }, arg(0, DType::Int64)});
    cases.push_back({"[4,5] axis 1 int32", [](DType dt) { return Inputs{make({4, 5}, dt, 82, kGrid)}; }, arg(1, DType::Int32)});
    cases.push_back({"[2,3,4] axis -1", [](DType dt) { return Inputs{make({2, 3, 4}, dt, 83, kAny)}; }, arg(-1, DType::Int64)});
    cases.push_back({"[0,5] axis 1", [](DType dt) { return Inputs{make({0, 5}, dt, 84)}; }, arg(1, DType::Int64)});
    cases.push_back({"[2^20] axis 0 with ties", [](DType dt) { return Inputs{make({1 << 20}, dt, 85, kExact)}; },
                     arg(0, DType::Int64)});
    cases.push_back({"[1000,1001] axis 1", [](DType dt) { return Inputs{make({1000, 1001}, dt, 86, Domain{-50, 50})}; },
                     arg(1, DType::Int32)});
    cases.push_back({"[1001,1000] axis 0", [](DType dt) { return Inputs{make({1001, 1000}, dt, 87, Domain{-50, 50})}; },
                     arg(0, DType::Int64)});
  }
}

void add_linalg(Table& t) {
  auto mm = [](ops::MatMulOptions o) { return binary_fn([o](const Tensor& a, const Tensor& b) { return ops::matmul(a, b, o); }); };
  const Domain d{-3, 3};
  auto pair = [d](Shape sa, Shape sb, uint64_t seed) {
    return [=](DType dt) { return Inputs{make(sa, dt, seed, d), make(sb, dt, seed + 1, d)}; };
  };
  auto& c = t[OpId::matmul];
  c.push_back({"[3,4] @ [4,5]", pair({3, 4}, {4, 5}, 91), mm({})});
  c.push_back({"transpose_a", pair({4, 3}, {4, 5}, 93), mm({.transpose_a = true})});
  c.push_back({"transpose_b", pair({3, 4}, {5, 4}, 95), mm({.transpose_b = true})});
  c.push_back({"both transposed", pair({4, 3}, {5, 4}, 97), mm({.transpose_a = true, .transpose_b = true})});
  c.push_back({"batch [2,3,4] @ [4,5]", pair({2, 3, 4}, {4, 5}, 99), mm({})});
  c.push_back({"batch broadcast [2,1,3,4] @ [3,4,2]", pair({2, 1, 3, 4}, {3, 4, 2}, 101), mm({})});
  c.push_back({"[1,1] @ [1,1]", pair({1, 1}, {1, 1}, 103), mm({})});
  c.push_back({"[0,4] @ [4,5]", pair({0, 4}, {4, 5}, 105), mm({})});
  c.push_back({"[3,0] @ [0,5] (zeros)", pair({3, 0}, {0, 5}, 107), mm({})});
  c.push_back({"[129,67] @ [67,131]", pair({129, 67}, {67, 131}, 109), mm({})});
  c.push_back({"[1,1000] @ [1000,1]", pair({1, 1000}, {1000, 1}, 111), mm({})});
  c.push_back({"[256,512] @ [384,512]^T", pair({256, 512}, {384, 512}, 113), mm({.transpose_b = true})});
  c.push_back({"batch [7,33,65] @ [7,65,17]", pair({7, 33, 65}, {7, 65, 17}, 115), mm({})});
  c.push_back({"row view operand", pair({9, 13}, {13, 6}, 117),
               [](const Inputs& in, DType) { return Outputs{ops::matmul(in[0].slice_rows(1, 6), in[1])}; }, kAll, 1, false});

  auto triple = [d](Shape sa, Shape sb, uint64_t seed) {
    return [=](DType dt) {
      return Inputs{make(sa, dt, seed, d), make(sb, dt, seed + 1, d), make({sb[sb.rank() - 1]}, dt, seed + 2, d)};
    };
  };
  auto mb = [](bool relu, ops::MatMulOptions o = {}) {
    return [relu, o](const Inputs& in, DType) {
      return Outputs{relu ? ops::matmul_bias_relu(in[0], in[1], in[2], o) : ops::matmul_bias(in[0], in[1], in[2], o)};
    };
  };
  auto& b = t[OpId::matmul_bias];
  b.push_back({"[3,4] @ [4,5] + bias", triple({3, 4}, {4, 5}, 121), mb(false), kFloats});
  b.push_back({"fused relu", triple({6, 7}, {7, 9}, 124), mb(true), kFloats});
  b.push_back({"batch [2,3,4] @ [4,5], fused relu", triple({2, 3, 4}, {4, 5}, 127), mb(true), kFloats});
  b.push_back({"MLP layer [8,784] @ [784,256], fused relu", triple({8, 784}, {784, 256}, 130), mb(true), kFloats});
  b.push_back({"[0,4] @ [4,5]", triple({0, 4}, {4, 5}, 133), mb(false), kFloats});
}

void add_array(Table& t) {
  auto gen1 = [](Shape s, uint64_t seed) { return [=](DType dt) { return Inputs{make(s, dt, seed)}; }; };
  auto& r = t[OpId::reshape];
  r.push_back({"[2,3,4] -> [6,4]", gen1({2, 3, 4}, 111), unary_fn([](const Tensor& x) { return ops::reshape(x, {6, 4}); })});
  r.push_back({"[] -> [1,1]", gen1({}, 112), unary_fn([](const Tensor& x) { return ops::reshape(x, {1, 1}); })});
  r.push_back({"[0,3] -> [3,0]", gen1({0, 3}, 113), unary_fn([](const Tensor& x) { return ops::reshape(x, {3, 0}); })});
  // A reshape result is a view: an op reading it must see the right elements.
  r.push_back({"row view -> [-1], then neg", gen1({9, 13}, 114), [](const Inputs& in, DType) {
                 return Outputs{ops::neg(ops::reshape(in[0].slice_rows(2, 5), {-1}))};
               }, kFloats, 1, false});

  auto& tr = t[OpId::transpose];
  tr.push_back({"perm {2,0,1}", gen1({2, 3, 4}, 121), unary_fn([](const Tensor& x) { return ops::transpose(x, {2, 0, 1}); })});
  tr.push_back({"default perm", gen1({3, 4}, 122), unary_fn([](const Tensor& x) { return ops::transpose(x); })});
  tr.push_back({"scalar", gen1({}, 123), unary_fn([](const Tensor& x) { return ops::transpose(x); })});
  tr.push_back({"[0,5]", gen1({0, 5}, 124), unary_fn([](const Tensor& x) { return ops::transpose(x); })});
  tr.push_back({"[517,1031] (odd tiles)", gen1({517, 1031}, 125), unary_fn([](const Tensor& x) { return ops::transpose(x); })});
  tr.push_back({"[8,33,17,5] perm {0,3,1,2}", gen1({8, 33, 17, 5}, 126),
                unary_fn([](const Tensor& x) { return ops::transpose(x, {0, 3, 1, 2}); })});
  tr.push_back({"row view", gen1({9, 13}, 127), [](const Inputs& in, DType) { return Outputs{ops::transpose(in[0].slice_rows(1, 8))}; },
                kAll, 1, false});

  auto& cc = t[OpId::concat];
  auto cat = [](int64_t axis) { return [axis](const Inputs& in, DType) { return Outputs{ops::concat(in, axis)}; }; };
  cc.push_back({"3 inputs axis 1", [](DType dt) { return Inputs{make({2, 3}, dt, 131), make({2, 1}, dt, 132), make({2, 2}, dt, 133)}; }, cat(1)});
  cc.push_back({"axis 0 with an empty input", [](DType dt) { return Inputs{make({1, 3}, dt, 134), make({0, 3}, dt, 135), make({2, 3}, dt, 136)}; },
                cat(0)});
  cc.push_back({"one input", [](DType dt) { return Inputs{make({4}, dt, 137)}; }, cat(0)});
  cc.push_back({"large axis -1", [](DType dt) { return Inputs{make({513, 129}, dt, 138), make({513, 67}, dt, 139)}; }, cat(-1)});

  auto& ss = t[OpId::strided_slice];
  ss.push_back({"strides 2", gen1({4, 5}, 141), unary_fn([](const Tensor& x) { return ops::strided_slice(x, {1, 0}, {4, 5}, {2, 2}); })});
  ss.push_back({"negative stride", gen1({4, 5}, 142),
                unary_fn([](const Tensor& x) { return ops::strided_slice(x, {3, 4}, {0, 0}, {-1, -2}); })});
  ss.push_back({"shrink axis", gen1({3, 4}, 143),
                unary_fn([](const Tensor& x) { return ops::strided_slice(x, {1, 1}, {2, 3}, {1, 1}, {.shrink_axis_mask = 1}); })});
  ss.push_back({"slice()", gen1({3, 4}, 144), unary_fn([](const Tensor& x) { return ops::slice(x, {1, 1}, {2, -1}); })});
  ss.push_back({"empty result", gen1({3, 4}, 145), unary_fn([](const Tensor& x) { return ops::slice(x, {1, 1}, {0, 2}); })});
  ss.push_back({"large strides 3", gen1({1031, 67}, 146),
                unary_fn([](const Tensor& x) { return ops::strided_slice(x, {5, 1}, {1031, 66}, {3, 2}); })});

  auto& g = t[OpId::gather];
  g.push_back({"axis 0, repeated indices", [](DType dt) { return Inputs{make({5, 3}, dt, 151), i64({0, 2, 2, 4}, {4})}; },
               binary_fn([](const Tensor& p, const Tensor& i) { return ops::gather(p, i); })});
  g.push_back({"axis 1, 2-d int32 indices",
               [](DType dt) { return Inputs{make({3, 4}, dt, 152), ops::cast(i64({3, 1, 1, 0}, {2, 2}), DType::Int32)}; },
               binary_fn([](const Tensor& p, const Tensor& i) { return ops::gather(p, i, {.axis = 1}); })});
  g.push_back({"batch_dims 1", [](DType dt) { return Inputs{make({2, 4, 3}, dt, 153), i64({0, 3, 3, 1, 2, 1}, {2, 3})}; },
               binary_fn([](const Tensor& p, const Tensor& i) { return ops::gather(p, i, {.axis = 1, .batch_dims = 1}); })});
  g.push_back({"empty indices", [](DType dt) { return Inputs{make({5, 3}, dt, 154), i64({}, {0})}; },
               binary_fn([](const Tensor& p, const Tensor& i) { return ops::gather(p, i); })});
  g.push_back({"large: 50000 rows of [1000,67]",
               [](DType dt) { return Inputs{make({1000, 67}, dt, 155), make({50000}, DType::Int64, 156, Domain{0, 999})}; },
               binary_fn([](const Tensor& p, const Tensor& i) { return ops::gather(p, i); })});

  auto& us = t[OpId::unsorted_segment_sum];
  us.push_back({"5 rows into 4 segments", [](DType dt) { return Inputs{make({5, 3}, dt, 161), i64({0, 2, 0, 1, 2}, {5})}; },
                binary_fn([](const Tensor& d, const Tensor& i) { return ops::unsorted_segment_sum(d, i, 4); })});
  us.push_back({"1000 rows into 7 segments, int32 ids",
                [](DType dt) { return Inputs{make({1000, 3}, dt, 162, kExact), make({1000}, DType::Int32, 163, Domain{0, 6})}; },
                binary_fn([](const Tensor& d, const Tensor& i) { return ops::unsorted_segment_sum(d, i, 7); })});
  // Many rows per segment (atomics on a GPU): exact values, full-precision dtypes.
  us.push_back({"100003 rows into 7 segments",
                [](DType dt) { return Inputs{make({100003, 3}, dt, 164, kExact), make({100003}, DType::Int64, 165, Domain{0, 6})}; },
                binary_fn([](const Tensor& d, const Tensor& i) { return ops::unsorted_segment_sum(d, i, 7); }),
                {DType::Float32, DType::Float64, DType::Int32, DType::Int64}});
  us.push_back({"empty data", [](DType dt) { return Inputs{make({0, 3}, dt, 166), i64({}, {0})}; },
                binary_fn([](const Tensor& d, const Tensor& i) { return ops::unsorted_segment_sum(d, i, 3); })});

  // one_hot: the key is the indices' dtype; out-of-range and negative indices give all-off rows.
  auto& oh = t[OpId::one_hot];
  for (DType out : {DType::Float32, DType::Float16, DType::Int64, DType::Bool})
    oh.push_back({std::string("depth 5 -> ") + dtype_name(out), [](DType dt) { return Inputs{make({3, 7}, dt, 171, Domain{-2, 6})}; },
                  unary_fn([out](const Tensor& i) { return ops::one_hot(i, 5, {.on_value = 3, .off_value = -1, .dtype = out}); })});
  oh.push_back({"axis 0", [](DType dt) { return Inputs{make({6}, dt, 172, Domain{0, 4})}; },
                unary_fn([](const Tensor& i) { return ops::one_hot(i, 4, {.axis = 0}); })});
  oh.push_back({"large [100003] depth 10", [](DType dt) { return Inputs{make({100003}, dt, 173, Domain{0, 10})}; },
                unary_fn([](const Tensor& i) { return ops::one_hot(i, 10); })});
  oh.push_back({"empty", [](DType dt) { return Inputs{make({0}, dt, 174, Domain{0, 4})}; },
                unary_fn([](const Tensor& i) { return ops::one_hot(i, 4); })});

  auto& p = t[OpId::pad];
  for (std::string mode : {"CONSTANT", "REFLECT", "SYMMETRIC"}) {
    p.push_back({mode + " [3,4]", gen1({3, 4}, 181),
                 unary_fn([mode](const Tensor& x) { return ops::pad(x, {{1, 2}, {2, 1}}, {.mode = mode, .constant_values = 1.5}); })});
    p.push_back({mode + " [513,257]", gen1({513, 257}, 182),
                 unary_fn([mode](const Tensor& x) { return ops::pad(x, {{3, 4}, {0, 5}}, {.mode = mode}); })});
  }
  p.push_back({"CONSTANT [0,3]", gen1({0, 3}, 183), unary_fn([](const Tensor& x) { return ops::pad(x, {{1, 1}, {0, 0}}); })});

  auto& tl = t[OpId::tile];
  tl.push_back({"[2,3] x {2,1}", gen1({2, 3}, 191), unary_fn([](const Tensor& x) { return ops::tile(x, {2, 1}); })});
  tl.push_back({"[1,3] x {3,2}", gen1({1, 3}, 192), unary_fn([](const Tensor& x) { return ops::tile(x, {3, 2}); })});
  tl.push_back({"[0,3] x {2,2}", gen1({0, 3}, 193), unary_fn([](const Tensor& x) { return ops::tile(x, {2, 2}); })});
  tl.push_back({"[257,3] x {4,100}", gen1({257, 3}, 194), unary_fn([](const Tensor& x) { return ops::tile(x, {4, 100}); })});

  auto& b = t[OpId::broadcast_to];
  b.push_back({"[3] -> [2,3]", gen1({3}, 201), unary_fn([](const Tensor& x) { return ops::broadcast_to(x, {2, 3}); })});
  b.push_back({"[2,1] -> [3,2,4]", gen1({2, 1}, 202), unary_fn([](const Tensor& x) { return ops::broadcast_to(x, {3, 2, 4}); })});
  b.push_back({"[] -> [2,2]", gen1({}, 203), unary_fn([](const Tensor& x) { return ops::broadcast_to(x, {2, 2}); })});
  b.push_back({"[3] -> [0,3]", gen1({3}, 204), unary_fn([](const Tensor& x) { return ops::broadcast_to(x, {0, 3}); })});
  b.push_back({"[513,1] -> [513,257]", gen1({513, 1}, 205), unary_fn([](const Tensor& x) { return ops::broadcast_to(x, {513, 257}); })});
}

// Creation and random ops take no inputs: the case's dtype is their output dtype.
void add_creation(Table& t) {
  auto make_fn = [](std::function<Tensor(DType)> f) { return [f](const Inputs&, DType dt) { return Outputs{f(dt)}; }; };
  auto none = [](DType) { return Inputs{}; };
  auto& f = t[OpId::fill];
  f.push_back({"full [3,5]", none, make_fn([](DType dt) { return ops::full({3, 5}, 2.5, dt); })});
  f.push_back({"zeros []", none, make_fn([](DType dt) { return ops::zeros({}, dt); })});
  f.push_back({"ones [0,4]", none, make_fn([](DType dt) { return ops::ones({0, 4}, dt); })});
  f.push_back({"full [1031,1017]", none, make_fn([](DType dt) { return ops::full({1031, 1017}, -7, dt); })});

  auto& r = t[OpId::range];
  r.push_back({"-3 to 17 step 2", none, make_fn([](DType dt) { return ops::range(-3, 17, 2, dt); })});
  r.push_back({"10 down to 0 step -3", none, make_fn([](DType dt) { return ops::range(10, 0, -3, dt); })});
  r.push_back({"empty", none, make_fn([](DType dt) { return ops::range(5, 5, 1, dt); })});
  r.push_back({"fractional step", none, make_fn([](DType dt) { return ops::range(-1.5, 3.25, 0.25, dt); }), kFloats});
  r.push_back({"2^20 values", none, make_fn([](DType dt) { return ops::range(0, 1 << 20, 1, dt); }),
               {DType::Float32, DType::Float64, DType::Int32, DType::Int64}});

  auto& l = t[OpId::linspace];
  l.push_back({"-1 to 1, 7 values", none, make_fn([](DType dt) { return ops::linspace(-1, 1, 7, dt); })});
  l.push_back({"one value", none, make_fn([](DType dt) { return ops::linspace(2, 3, 1, dt); })});
  l.push_back({"0 to 10, 65537 values", none, make_fn([](DType dt) { return ops::linspace(0, 10, 65537, dt); })});

  // Random ops: the generator's state is restored between the two runs, so both draw the same Philox blocks.
  const std::vector<Shape> shapes = {{7}, {}, {0}, {1001, 33}, {1 << 20}};
  for (const Shape& s : shapes) {
    const std::string n = str(s);
    t[OpId::random_uniform].push_back(
        {n, none, make_fn([s](DType dt) {
           const bool integral = is_integer(dt);
           return random::uniform(s, {.minval = integral ? -50.0 : -2.0, .maxval = integral ? 1000.0 : 3.0, .dtype = dt, .seed = 17});
         }), kAll, 1, false, true});
    // Normal samples go through logf/sinf/cosf, whose CUDA versions are within 2 ulp of glibc's but not
    // identical: the same Philox words, compared to a few ulp.
    t[OpId::random_normal].push_back(
        {n, none, make_fn([s](DType dt) { return random::normal(s, {.mean = 1, .stddev = 2, .dtype = dt, .seed = 18}); }), kAll, 4});
    // A sample within an ulp of +-2 could be kept on one device and redrawn on the other (one in ~10^7),
    // so the largest shape is left out.
    if (s.num_elements() < (1 << 20))
      t[OpId::truncated_normal].push_back(
          {n, none, make_fn([s](DType dt) { return random::truncated_normal(s, {.dtype = dt, .seed = 19}); }), kAll, 4});
  }
  // The global seed and the op-seed counter (unseeded ops) too.
  t[OpId::random_normal].push_back({"global seed", none, make_fn([](DType dt) {
                                      random::set_seed(5);
                                      return random::normal({515}, {.dtype = dt});
                                    }), kAll, 4});
}

void add_nn(Table& t) {
  auto xent = binary_fn([](const Tensor& logits, const Tensor& labels) {
    return ops::sparse_softmax_cross_entropy_with_logits(labels, logits);
  });
  auto& xe = t[OpId::sparse_softmax_cross_entropy_with_logits];
  const std::vector<DType> xent_dtypes = {DType::Float32, DType::Float64};
  xe.push_back({"[3,4], int64 labels", [](DType dt) { return Inputs{make({3, 4}, dt, 205), i64({3, 0, 2}, {3})}; }, xent,
                xent_dtypes});
  xe.push_back({"[2,3,5], int32 labels",
                [](DType dt) {
                  return Inputs{make({2, 3, 5}, dt, 206), ops::cast(i64({4, 0, 1, 2, 3, 4}, {2, 3}), DType::Int32)};
                },
                xent, xent_dtypes});
  xe.push_back({"[512,1000] logits up to 30",
                [](DType dt) { return Inputs{make({512, 1000}, dt, 207, Domain{-30, 30}), make({512}, DType::Int64, 208, Domain{0, 999})}; },
                xent, xent_dtypes});
  auto backprop = binary_fn([](const Tensor& logits, const Tensor& labels) {
    return ops::sparse_softmax_cross_entropy_backprop(labels, logits);
  });
  auto& xb = t[OpId::sparse_softmax_cross_entropy_backprop];
  xb.push_back({"[3,4], int64 labels", [](DType dt) { return Inputs{make({3, 4}, dt, 231), i64({3, 0, 2}, {3})}; },
                backprop, xent_dtypes});
  xb.push_back({"[2,3,5], int32 labels, one out of range",
                [](DType dt) {
                  return Inputs{make({2, 3, 5}, dt, 232), ops::cast(i64({4, 0, 7, 2, -1, 4}, {2, 3}), DType::Int32)};
                },
                backprop, xent_dtypes});
  xb.push_back({"[512,1000] logits up to 30",
                [](DType dt) { return Inputs{make({512, 1000}, dt, 233, Domain{-30, 30}), make({512}, DType::Int64, 234, Domain{0, 999})}; },
                backprop, xent_dtypes});
  // Fused attention: the attention and the logsumexp, and the backward from them; over 64 rows the CUDA kernels'
  // tiles and the CPU's blocks take turns.
  struct Att {
    std::string name;
    int64_t b, tq, tk, h, d, dv;
    double scale;
    bool causal;
  };
  const std::vector<Att> atts = {{"[2,3,2,4] keys 5", 2, 3, 5, 2, 4, 3, 0.5, false},
                                 {"[1,7,2,3] keys 4, causal", 1, 7, 4, 2, 3, 2, 0.7, true},
                                 {"[2,130,3,32] keys 150", 2, 130, 150, 3, 32, 16, 0.2, false},
                                 {"[2,150,3,32] keys 130, causal", 2, 150, 130, 3, 32, 16, 0.2, true}};
  const std::vector<DType> att_dtypes = {DType::Float32, DType::Float64};
  for (const Att& a : atts) {
    auto qkv = [a](DType dt) {
      return Inputs{make({a.b, a.tq, a.h, a.d}, dt, 241), make({a.b, a.tk, a.h, a.d}, dt, 242),
                    make({a.b, a.tk, a.h, a.dv}, dt, 243), make({a.b, a.tq, a.h, a.dv}, dt, 244)};
    };
    t[OpId::fused_attention].push_back(
        {a.name, [qkv](DType dt) { Inputs in = qkv(dt); in.pop_back(); return in; },
         [a](const Inputs& in, DType) { return ops::fused_attention(in[0], in[1], in[2], a.scale, a.causal); },
         att_dtypes, 2});
    t[OpId::fused_attention_grad].push_back(
        {a.name, qkv,
         [a](const Inputs& in, DType) {
           const std::vector<Tensor> f = ops::fused_attention(in[0], in[1], in[2], a.scale, a.causal);
           return ops::fused_attention_grad(in[0], in[1], in[2], f[0], f[1], in[3], a.scale, a.causal);
         },
         att_dtypes, 4, false});
  }
  // Fused batch norm (cuDNN's NHWC batch norm on CUDA): the output and the statistics (not the saved state, which
  // only CUDA keeps), and the backward from them; a rank-2 input and one past cuDNN's persistent kernels' blocks.
  struct Bn {
    std::string name;
    Shape shape;
    BatchNormOps fusion;
  };
  const std::vector<Bn> bns = {{"[4,5,6,8]", {4, 5, 6, 8}, BatchNormOps::Bn},
                               {"[4,5,6,8] relu", {4, 5, 6, 8}, BatchNormOps::BnRelu},
                               {"[4,5,6,8] add, relu", {4, 5, 6, 8}, BatchNormOps::BnAddRelu},
                               {"[33,20]", {33, 20}, BatchNormOps::Bn},
                               {"[32,14,14,64] add, relu", {32, 14, 14, 64}, BatchNormOps::BnAddRelu}};
  const std::vector<DType> bn_dtypes = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16};
  for (const Bn& b : bns) {
    const bool add = b.fusion == BatchNormOps::BnAddRelu;
    // x, scale, offset[, side], then dy for the backward.
    auto bn_in = [b, add](bool with_dy) {
      return [b, add, with_dy](DType dt) {
        const Shape c{b.shape[b.shape.rank() - 1]};
        const DType sd = dt == DType::Float64 ? DType::Float64 : DType::Float32;
        Inputs in{make(b.shape, dt, 251), make(c, sd, 252), make(c, sd, 253)};
        if (add) in.push_back(make(b.shape, dt, 254));
        if (with_dy) in.push_back(make(b.shape, dt, 255));
        return in;
      };
    };
    auto forward = [b, add](const Inputs& in) {
      const std::optional<Tensor> side = add ? std::optional<Tensor>(in[3]) : std::nullopt;
      return ops::fused_batch_norm(in[0], in[1], in[2], 1e-3, b.fusion, side);
    };
    t[OpId::fused_batch_norm].push_back({b.name, bn_in(false),
                                         [forward](const Inputs& in, DType) {
                                           const std::vector<Tensor> r = forward(in);
                                           return Outputs{r[0], r[1], r[2], r[3]};
                                         },
                                         bn_dtypes, 4});
    t[OpId::fused_batch_norm_grad].push_back(
        {b.name, bn_in(true),
         [b, forward](const Inputs& in, DType) {
           const std::vector<Tensor> r = forward(in);
           const std::optional<Tensor> y = b.fusion != BatchNormOps::Bn ? std::optional<Tensor>(r[0]) : std::nullopt;
           return ops::fused_batch_norm_grad(in.back(), in[0], in[1], in[2], r[1], r[3], r[4], 1e-3, b.fusion, y);
         },
         bn_dtypes, 8, false});
  }
  // Whole-sequence LSTM and GRU (cuDNN's on a GPU; the GRU in cuDNN's reset_after form): the outputs but the saved
  // state (each device's own layout), and the backward from them. cuDNN's products may run in TF32, hence room for
  // float32.
  const std::vector<DType> rnn_dtypes = {DType::Float32, DType::Float64};
  auto rnn_inputs = [](int gates, bool lstm) {
    return [gates, lstm](DType dt) {
      Inputs in{make({3, 5, 4}, dt, 251), make({3, 6}, dt, 252)};
      if (lstm) in.push_back(make({3, 6}, dt, 253));
      in.push_back(make({4, gates * 6}, dt, 254));
      in.push_back(make({6, gates * 6}, dt, 255));
      in.push_back(lstm ? make({gates * 6}, dt, 256) : make({2, gates * 6}, dt, 256));
      in.push_back(make({3, 5, 6}, dt, 257));  // the backward's dy, dh (and dc)
      in.push_back(make({3, 6}, dt, 258));
      if (lstm) in.push_back(make({3, 6}, dt, 259));
      return in;
    };
  };
  t[OpId::lstm_sequence].push_back({"batch 3, 5 steps, 4 features, 6 units",
                                    [rnn_inputs](DType dt) { Inputs in = rnn_inputs(4, true)(dt); in.resize(6); return in; },
                                    [](const Inputs& in, DType) {
                                      Outputs r = ops::lstm_sequence(in[0], in[1], in[2], in[3], in[4], in[5]);
                                      r.pop_back();
                                      return r;
                                    },
                                    rnn_dtypes, 4});
  t[OpId::lstm_sequence_grad].push_back(
      {"batch 3, 5 steps, 4 features, 6 units", rnn_inputs(4, true),
       [](const Inputs& in, DType) {
         const std::vector<Tensor> f = ops::lstm_sequence(in[0], in[1], in[2], in[3], in[4], in[5]);
         return ops::lstm_sequence_grad(in[0], in[1], in[2], in[3], in[4], in[5], f[0], f[3], in[6], in[7], in[8]);
       },
       rnn_dtypes, 4, false});
  t[OpId::gru_sequence].push_back({"reset_after, batch 3, 5 steps, 4 features, 6 units",
                                   [rnn_inputs](DType dt) { Inputs in = rnn_inputs(3, false)(dt); in.resize(5); return in; },
                                   [](const Inputs& in, DType) {
                                     Outputs r = ops::gru_sequence(in[0], in[1], in[2], in[3], in[4], true);
                                     r.pop_back();
                                     return r;
                                   },
                                   rnn_dtypes, 4});
  t[OpId::gru_sequence_grad].push_back(
      {"reset_after, batch 3, 5 steps, 4 features, 6 units", rnn_inputs(3, false),
       [](const Inputs& in, DType) {
         const std::vector<Tensor> f = ops::gru_sequence(in[0], in[1], in[2], in[3], in[4], true);
         return ops::gru_sequence_grad(in[0], in[1], in[2], in[3], in[4], f[0], f[2], in[5], in[6], true);
       },
       rnn_dtypes, 4, false});
  // With sequence lengths (cuDNN's padded I/O): a full, a shorter and a one-step sequence.
  auto with_lengths = [](Inputs in) {
    in.push_back(Tensor::from_vector<int32_t>({5, 3, 1}, {3}));
    return in;
  };
  t[OpId::lstm_sequence].push_back({"sequence lengths 5, 3, 1",
                                    [rnn_inputs, with_lengths](DType dt) {
                                      Inputs in = rnn_inputs(4, true)(dt);
                                      in.resize(6);
                                      return with_lengths(in);
                                    },
                                    [](const Inputs& in, DType) {
                                      Outputs r = ops::lstm_sequence(in[0], in[1], in[2], in[3], in[4], in[5], in[6]);
                                      r.pop_back();
                                      return r;
                                    },
                                    rnn_dtypes, 4});
  t[OpId::lstm_sequence_grad].push_back(
      {"sequence lengths 5, 3, 1", [rnn_inputs, with_lengths](DType dt) { return with_lengths(rnn_inputs(4, true)(dt)); },
       [](const Inputs& in, DType) {
         const std::vector<Tensor> f = ops::lstm_sequence(in[0], in[1], in[2], in[3], in[4], in[5], in[9]);
         return ops::lstm_sequence_grad(in[0], in[1], in[2], in[3], in[4], in[5], f[0], f[3], in[6], in[7], in[8],
                                        in[9]);
       },
       rnn_dtypes, 4, false});
  t[OpId::gru_sequence_grad].push_back(
      {"reset_after, sequence lengths 5, 3, 1",
       [rnn_inputs, with_lengths](DType dt) { return with_lengths(rnn_inputs(3, false)(dt)); },
       [](const Inputs& in, DType) {
         const std::vector<Tensor> f = ops::gru_sequence(in[0], in[1], in[2], in[3], in[4], true, in[7]);
         return ops::gru_sequence_grad(in[0], in[1], in[2], in[3], in[4], f[0], f[2], in[5], in[6], true, in[7]);
       },
       rnn_dtypes, 4, false});
  for (OpId op : {OpId::softmax, OpId::log_softmax}) {
    auto sm = [op](int64_t axis) {
      return unary_fn([op, axis](const Tensor& x) { return op == OpId::softmax ? ops::softmax(x, axis) : ops::log_softmax(x, axis); });
    };
    auto& c = t[op];
    c.push_back({"[3,4] axis -1", [](DType dt) { return Inputs{make({3, 4}, dt, 211)}; }, sm(-1)});
    c.push_back({"[3,4] axis 0", [](DType dt) { return Inputs{make({3, 4}, dt, 212)}; }, sm(0)});
    c.push_back({"[2,3,5] axis 1", [](DType dt) { return Inputs{make({2, 3, 5}, dt, 213)}; }, sm(1)});
    c.push_back({"[512,1000] axis -1, logits up to 30", [](DType dt) { return Inputs{make({512, 1000}, dt, 214, Domain{-30, 30})}; },
                 sm(-1)});
    c.push_back({"[1000,3] axis 0", [](DType dt) { return Inputs{make({1000, 3}, dt, 215)}; }, sm(0)});
    c.push_back({"[7,4099] axis -1", [](DType dt) { return Inputs{make({7, 4099}, dt, 216)}; }, sm(-1)});
    c.push_back({"[0,5] axis -1", [](DType dt) { return Inputs{make({0, 5}, dt, 217)}; }, sm(-1)});
  }

  // Convolutions: cuDNN may pick Winograd or FFT algorithms, hence a little more room than a plain dot product.
  const double conv_tol = 3;
  auto conv = [](ops::Conv2DOptions o) { return binary_fn([o](const Tensor& x, const Tensor& f) { return ops::conv2d(x, f, o); }); };
  auto pair = [](Shape sx, Shape sf, uint64_t seed) {
    return [=](DType dt) { return Inputs{make(sx, dt, seed), make(sf, dt, seed + 1)}; };
  };
  auto& c = t[OpId::conv2d];
  c.push_back({"VALID", pair({2, 5, 5, 3}, {3, 3, 3, 4}, 221), conv({}), kAll, conv_tol});
  c.push_back({"SAME stride 2", pair({1, 6, 5, 3}, {3, 2, 3, 2}, 223), conv({.strides = {2, 2}, .padding = "SAME"}), kAll, conv_tol});
  c.push_back({"dilation 2", pair({1, 6, 6, 2}, {2, 2, 2, 3}, 225), conv({.dilations = {2, 2}}), kAll, conv_tol});
  c.push_back({"groups 2", pair({1, 5, 5, 4}, {3, 3, 2, 4}, 227), conv({}), kAll, conv_tol});
  c.push_back({"depthwise (groups = channels)", pair({2, 9, 9, 8}, {3, 3, 1, 8}, 229), conv({.padding = "SAME"}), kAll, conv_tol});
  c.push_back({"1x1", pair({4, 17, 19, 8}, {1, 1, 8, 16}, 231), conv({}), kAll, conv_tol});
  c.push_back({"Fashion-MNIST first layer", pair({16, 28, 28, 1}, {3, 3, 1, 32}, 233), conv({}), kAll, conv_tol});
  c.push_back({"[8,32,32,16] SAME 3x3x32", pair({8, 32, 32, 16}, {3, 3, 16, 32}, 235), conv({.padding = "SAME"}), kAll, conv_tol});
  c.push_back({"batch 0", pair({0, 5, 5, 3}, {3, 3, 3, 4}, 237), conv({}), kAll, conv_tol});

  const ops::Conv2DOptions same2{.strides = {2, 2}, .padding = "SAME"};
  auto conv_bias = [](ops::Conv2DOptions o) {
    return [o](const Inputs& in, DType) { return Outputs{ops::conv2d_bias(in[0], in[1], in[2], o)}; };
  };
  auto triple = [](Shape sx, Shape sf, uint64_t seed) {
    return [=](DType dt) { return Inputs{make(sx, dt, seed), make(sf, dt, seed + 1), make({sf[3]}, dt, seed + 2)}; };
  };
  auto& cb = t[OpId::conv2d_bias];
  cb.push_back({"VALID", triple({2, 5, 5, 3}, {3, 3, 3, 4}, 261), conv_bias({}), kAll, conv_tol});
  cb.push_back({"SAME stride 2", triple({1, 6, 5, 3}, {3, 2, 3, 2}, 264), conv_bias(same2), kAll, conv_tol});
  cb.push_back({"groups 2", triple({1, 5, 5, 4}, {3, 3, 2, 4}, 267), conv_bias({}), kAll, conv_tol});
  cb.push_back({"Fashion-MNIST second layer", triple({8, 13, 13, 32}, {3, 3, 32, 64}, 270), conv_bias({}), kAll,
                conv_tol});
  cb.push_back({"batch 0", triple({0, 5, 5, 3}, {3, 3, 3, 4}, 273), conv_bias({}), kAll, conv_tol});
  cb.push_back({"fused relu, Fashion-MNIST first layer", triple({8, 28, 28, 1}, {3, 3, 1, 32}, 276),
                [](const Inputs& in, DType) { return Outputs{ops::conv2d_bias_relu(in[0], in[1], in[2])}; }, kAll,
                conv_tol});

  auto bi = [](Shape in_shape, ops::Conv2DOptions o) {
    return binary_fn([in_shape, o](const Tensor& f, const Tensor& dy) { return ops::conv2d_backprop_input(in_shape, f, dy, o); });
  };
  auto bf = [](Shape f_shape, ops::Conv2DOptions o) {
    return binary_fn([f_shape, o](const Tensor& x, const Tensor& dy) { return ops::conv2d_backprop_filter(x, f_shape, dy, o); });
  };
  auto& ci = t[OpId::conv2d_backprop_input];
  ci.push_back({"SAME stride 2", pair({3, 3, 3, 2}, {1, 3, 3, 2}, 241), bi({1, 5, 5, 3}, same2), kAll, conv_tol});
  ci.push_back({"VALID", pair({3, 3, 3, 4}, {2, 3, 3, 4}, 243), bi({2, 5, 5, 3}, {}), kAll, conv_tol});
  ci.push_back({"dilation 2", pair({2, 2, 2, 3}, {1, 4, 4, 3}, 245), bi({1, 6, 6, 2}, {.dilations = {2, 2}}), kAll, conv_tol});
  ci.push_back({"[8,32,32,16] SAME", pair({3, 3, 16, 32}, {8, 32, 32, 32}, 247), bi({8, 32, 32, 16}, {.padding = "SAME"}), kAll,
                conv_tol});
  // Uneven SAME pads (one more after than before): the CUDA kernel pads the input explicitly by the difference
  // and crops the input gradient from the padded shape. Stride 2 over 6x5 pads 0/1 (cuDNN pads nothing); a 4x4
  // window pads 1/2 (cuDNN pads 1, the rest explicit).
  ci.push_back({"SAME stride 2, uneven pads", pair({3, 2, 3, 2}, {1, 3, 3, 2}, 287), bi({1, 6, 5, 3}, same2), kAll,
                conv_tol});
  ci.push_back({"SAME 4x4, uneven pads", pair({4, 4, 4, 8}, {2, 7, 7, 8}, 289), bi({2, 7, 7, 4}, {.padding = "SAME"}),
                kAll, conv_tol});
  auto& cf = t[OpId::conv2d_backprop_filter];
  cf.push_back({"SAME stride 2, uneven pads", pair({1, 6, 5, 3}, {1, 3, 3, 2}, 293), bf({3, 2, 3, 2}, same2), kAll,
                conv_tol});
  cf.push_back({"SAME 4x4, uneven pads", pair({2, 7, 7, 4}, {2, 7, 7, 8}, 295), bf({4, 4, 4, 8}, {.padding = "SAME"}),
                kAll, conv_tol});
  cf.push_back({"SAME stride 2", pair({1, 5, 5, 3}, {1, 3, 3, 2}, 251), bf({3, 3, 3, 2}, same2), kAll, conv_tol});
  cf.push_back({"VALID", pair({2, 5, 5, 3}, {2, 3, 3, 4}, 253), bf({3, 3, 3, 4}, {}), kAll, conv_tol});
  cf.push_back({"dilation 2", pair({1, 6, 6, 2}, {1, 4, 4, 3}, 255), bf({2, 2, 2, 3}, {.dilations = {2, 2}}), kAll, conv_tol});
  // Sums over 8 * 32 * 32 positions per filter element.
  cf.push_back({"[8,32,32,16] SAME", pair({8, 32, 32, 16}, {8, 32, 32, 32}, 257), bf({3, 3, 16, 32}, {.padding = "SAME"}), kAll,
                conv_tol});

  struct P {
    std::string name;
    std::array<int64_t, 2> k;
    ops::Pool2DOptions o;
    Shape in;
  };
  const std::vector<P> pools = {{"2x2 VALID", {2, 2}, {.strides = {2, 2}}, {2, 5, 5, 2}},
                                {"3x3 SAME stride 1", {3, 3}, {.padding = "SAME"}, {2, 5, 5, 2}},
                                {"3x3 SAME stride 2", {3, 3}, {.strides = {2, 2}, .padding = "SAME"}, {2, 5, 5, 2}},
                                {"3x3 SAME stride 2 [8,33,33,16]", {3, 3}, {.strides = {2, 2}, .padding = "SAME"}, {8, 33, 33, 16}},
                                {"2x2 VALID [32,26,26,32]", {2, 2}, {.strides = {2, 2}}, {32, 26, 26, 32}}};
  for (const P& p : pools) {
    for (const auto& [suffix, d] : std::vector<std::pair<std::string, Domain>>{{"", kAny}, {", ties", kGrid}}) {
      t[OpId::max_pool2d].push_back({p.name + suffix, [p, d = d](DType dt) { return Inputs{make(p.in, dt, 261, d)}; },
                                     unary_fn([p](const Tensor& x) { return ops::max_pool2d(x, p.k, p.o); })});
      // The gradient routes to the first maximum of each window: ties must go the same way on both backends.
      t[OpId::max_pool2d_grad].push_back({p.name + suffix,
                                          [p, d = d](DType dt) {
                                            Tensor x = make(p.in, dt, 262, d);
                                            Tensor y;
                                            {
                                              DeviceScope on(kCpu);
                                              y = ops::max_pool2d(x, p.k, p.o);
                                            }
                                            return Inputs{x, y, make(y.shape(), dt, 263)};
                                          },
                                          [p](const Inputs& in, DType) {
                                            return Outputs{ops::max_pool2d_grad(in[0], in[1], in[2], p.k, p.o)};
                                          },
                                          kFloats});
    }
    t[OpId::avg_pool2d].push_back({p.name, [p](DType dt) { return Inputs{make(p.in, dt, 264)}; },
                                   unary_fn([p](const Tensor& x) { return ops::avg_pool2d(x, p.k, p.o); })});
    t[OpId::avg_pool2d_grad].push_back({p.name,
                                        [p](DType dt) {
                                          Shape out;
                                          {
                                            DeviceScope on(kCpu);
                                            out = ops::avg_pool2d(ops::zeros(p.in, dt), p.k, p.o).shape();
                                          }
                                          return Inputs{make(out, dt, 265)};
                                        },
                                        unary_fn([p](const Tensor& g) { return ops::avg_pool2d_grad(p.in, g, p.k, p.o); }),
                                        kFloats});
  }
}

void add_optimizer(Table& t) {
  for (const Shape& s : std::vector<Shape>{{7}, {}, {0}, {1031, 67}})
    t[OpId::apply_adam].push_back(
        {str(s),
         [s](DType dt) { return Inputs{make(s, dt, 271), make(s, dt, 272, Domain{-0.1, 0.1}), make(s, dt, 273, Domain{0, 0.01}),
                                       make(s, dt, 274, Domain{-0.5, 0.5})}; },
         [](const Inputs& in, DType) {
           ops::AdamUpdate u = ops::apply_adam(in[0], in[1], in[2], in[3], 1e-3, 0.9, 0.999, 1e-7);
           return Outputs{u.variable, u.momentum, u.velocity};
         }});
  // The gradient as the factors of a^T @ b: a batch of 1, of 3 and of 8 rows, in place on copies.
  for (const auto& [k, rows, cols] : {std::tuple<int64_t, int64_t, int64_t>{1, 7, 5}, {3, 301, 67}, {8, 64, 33}})
    t[OpId::apply_adam_factored].push_back(
        {str(Shape{k, rows, cols}),
         [k, rows, cols](DType dt) {
           const Shape s{rows, cols};
           return Inputs{make(s, dt, 281), make(s, dt, 282, Domain{-0.1, 0.1}), make(s, dt, 283, Domain{0, 0.01}),
                         make(Shape{k, rows}, dt, 284, Domain{-0.5, 0.5}), make(Shape{k, cols}, dt, 285, Domain{-0.5, 0.5})};
         },
         [](const Inputs& in, DType) {
           Tensor w = in[0].clone(), m = in[1].clone(), v = in[2].clone();
           ops::apply_adam_factored_in_place(w, m, v, in[3], in[4], 1e-3, 0.9, 0.999, 1e-7);
           return Outputs{w, m, v};
         }});
  // Several variables in one pass, in place on copies, the step size made by the kernel from the step (on the
  // device in the GPU run), applied and skipped.
  for (const auto& [apply, large] : {std::pair<bool, bool>{true, false}, {true, true}, {false, false}})
    t[OpId::apply_adam_multi].push_back(
        {std::string(apply ? "applied" : "skipped") + (large ? " large" : ""),
         [apply = apply, large = large](DType dt) {
           Inputs in;
           uint64_t seed = 301;
           for (const Shape& s : std::vector<Shape>{{7}, {0}, large ? Shape{1031, 67} : Shape{3, 5}, {}})
             for (Domain d : {Domain{-1, 1}, Domain{-0.1, 0.1}, Domain{0, 0.01}, Domain{-0.5, 0.5}})
               in.push_back(make(s, dt, seed++, d));
           in.push_back(Tensor::scalar<int64_t>(41, kCpu));
           in.push_back(Tensor::scalar<bool>(apply, kCpu));
           return in;
         },
         [](const Inputs& in, DType) {
           std::vector<ops::AdamSlots> slots;
           for (size_t k = 0; k + 2 < in.size(); k += 4)
             slots.push_back({in[k].clone(), in[k + 1].clone(), in[k + 2].clone(), in[k + 3]});
           ops::apply_adam_multi_in_place(slots, in[in.size() - 2], in.back(), 1e-3, 0.9, 0.999, 1e-7);
           Outputs out;
           for (const ops::AdamSlots& s : slots) out.insert(out.end(), {s.variable, s.momentum, s.velocity});
           return out;
         },
         {DType::Float32, DType::Float64}, 1, /*grad=*/false});
  // SGD over several variables, without and with momentum (plain and Nesterov), applied and skipped.
  for (const auto& [momentum, nesterov, apply, large] :
       {std::tuple<double, bool, bool, bool>{0, false, true, false}, {0.9, false, true, false}, {0.9, true, true, false},
        {0.9, true, false, false}, {0.9, true, true, true}})
    t[OpId::apply_sgd_multi].push_back(
        {"momentum " + std::to_string(momentum) + (nesterov ? " nesterov" : "") + (apply ? "" : " skipped") +
             (large ? " large" : ""),
         [momentum = momentum, apply = apply, large = large](DType dt) {
           Inputs in;
           uint64_t seed = 331;
           for (const Shape& s : std::vector<Shape>{{7}, {0}, large ? Shape{1031, 67} : Shape{3, 5}, {}})
             for (int i = 0; i < (momentum != 0 ? 3 : 2); ++i) in.push_back(make(s, dt, seed++, Domain{-1, 1}));
           in.push_back(Tensor::scalar<bool>(apply, kCpu));
           return in;
         },
         [momentum = momentum, nesterov = nesterov](const Inputs& in, DType) {
           const size_t group = momentum != 0 ? 3 : 2;
           std::vector<ops::SgdSlots> slots;
           for (size_t k = 0; k + 1 < in.size(); k += group)
             slots.push_back({in[k].clone(), group == 3 ? in[k + 1].clone() : Tensor(), in[k + group - 1]});
           ops::apply_sgd_multi_in_place(slots, in.back(), 1e-2, momentum, nesterov);
           Outputs out;
           for (const ops::SgdSlots& s : slots) {
             out.push_back(s.variable);
             if (s.momentum.defined()) out.push_back(s.momentum);
           }
           return out;
         },
         {DType::Float32, DType::Float64}, 1, /*grad=*/false});
  // Loss scaling's unscale and finite check over gradients of every floating dtype (the case's dtype first, which
  // picks the kernel): all finite, and with an infinity in the case's gradient (the flag clears).
  for (const Shape& s : std::vector<Shape>{{7}, {}, {0}, {1031, 67}})
    for (bool with_inf : {false, true})
      t[OpId::unscale_gradients].push_back(
          {str(s) + (with_inf ? " inf" : ""),
           [s, with_inf](DType dt) {
             Tensor g = make(s, dt, 291, Domain{-4e4, 4e4});
             if (with_inf && g.num_elements() > 0) g = ops::where(ops::equal(g, ops::reduce_max(g)), g * std::numeric_limits<double>::infinity(), g);
             Inputs in{g};
             uint64_t seed = 292;
             for (DType other : {DType::Float16, DType::BFloat16, DType::Float32, DType::Float64})
               in.push_back(make({5, 3}, other, seed++, Domain{-4e4, 4e4}));
             in.push_back(Tensor::scalar<float>(3 * 32768.0f, kCpu));
             return in;
           },
           [](const Inputs& in, DType) {
             ops::UnscaledGradients u = ops::unscale_gradients(Inputs(in.begin(), in.end() - 1), in.back());
             u.gradients.push_back(u.finite);
             return u.gradients;
           },
           {DType::Float16, DType::BFloat16, DType::Float32, DType::Float64}, 1, /*grad=*/false, /*bitwise=*/true});
  // The scale's update: finite below and at the growth step, and skipped.
  for (const auto& [counter, finite] : {std::pair<int64_t, bool>{3, true}, {9, true}, {9, false}})
    t[OpId::update_loss_scale].push_back(
        {"counter " + std::to_string(counter) + (finite ? "" : " skipped"),
         [counter = counter, finite = finite](DType) {
           return Inputs{Tensor::scalar<float>(32768.0f, kCpu), Tensor::scalar<int64_t>(counter, kCpu),
                         Tensor::scalar<bool>(finite, kCpu)};
         },
         [](const Inputs& in, DType) {
           const ops::LossScaleUpdate u = ops::update_loss_scale(in[0], in[1], in[2], 10);
           return Outputs{u.scale, u.counter};
         },
         {DType::Float32}, 1, /*grad=*/false, /*bitwise=*/true});
}

// affine_transform at two fixed transforms (a rotation with scaling, a projective one), every fill mode and
// interpolation; the transforms are float32 whatever the images' dtype.
void add_image(Table& t) {
  for (std::string interpolation : {"nearest", "bilinear"})
    for (std::string fill_mode : {"reflect", "wrap", "constant", "nearest"})
      t[OpId::affine_transform].push_back(
          {interpolation + ", " + fill_mode,
           [](DType dt) {
             return Inputs{make({2, 5, 6, 3}, dt, 281),
                           consts({1.2, -0.5, 1.0, 0.5, 1.2, -1.5, 0, 0, 0.9, 0.2, -2.0, -0.1, 1.1, 0.7, 0.02, -0.03},
                                  {2, 8}, DType::Float32)};
           },
           binary_fn([=](const Tensor& x, const Tensor& tr) {
             return ops::image::affine_transform(
                 x, tr, {.interpolation = interpolation, .fill_mode = fill_mode, .fill_value = 0.25});
           }),
           kFloats, 1, /*grad=*/false});
}

// custom: the tests' custom op (tests/support/custom_test_ops.h), whose CUDA kernel is a user's .cu; every dtype,
// as the `custom` row's CPU kernel takes them all (the op's own infer decides).
void add_custom(Table& t) {
  for (const Shape& s : {Shape{}, Shape{7}, Shape{3, 5}, Shape{0, 4}, Shape{300, 301}})
    t[OpId::custom].push_back({"test_roll " + str(s), [s](DType dt) { return Inputs{make(s, dt, 301)}; },
                               unary_fn([](const Tensor& x) { return testing::test_roll(x, 5); }), kAll, 1, true,
                               true});
}

const Table& table() {
  static const Table t = [] {
    Table t;
    add_elementwise(t);
    add_reduce(t);
    add_linalg(t);
    add_array(t);
    add_creation(t);
    add_nn(t);
    add_image(t);
    add_optimizer(t);
    add_custom(t);
    return t;
  }();
  return t;
}

}  // namespace

// ------------------------------------------------------------------------------------------------- runner

namespace {

// Ops executed while a case's function runs on the CPU (the table check's hook).
std::set<OpId>* g_seen = nullptr;
void seen_hook(const OpRecord& r) {
  if (g_seen) g_seen->insert(r.op);
}

// Matmul and convolutions compare at full float32 precision; the TF32 case turns it back on.
struct Tf32Scope {
  bool old = config::tensor_float_32_execution_enabled();
  explicit Tf32Scope(bool on) { config::enable_tensor_float_32_execution(on); }
  ~Tf32Scope() { config::enable_tensor_float_32_execution(old); }
};

// Relative tolerance of a dtype (float16 and bfloat16 keep 11 and 8 significant bits); integers and bool exact.
double rtol_for(DType dt) { return is_floating(dt) ? testing::tolerance_for(dt) : 0; }

// Where got (from the GPU) and want (from the CPU) disagree, in words; empty when they agree. Floats agree
// when |got - want| <= rtol (|want| + max |want|): sums that cancel are judged against the size of the
// output, not of the one element. NaN matches NaN, infinities match exactly.
std::string compare(const Tensor& want, const Tensor& got, double rtol, bool bitwise, bool per_element = false) {
  std::ostringstream os;
  if (got.dtype() != want.dtype() || got.shape() != want.shape()) {
    os << "got " << got.dtype() << " " << got.shape() << ", expected " << want.dtype() << " " << want.shape();
    return os.str();
  }
  const std::vector<double> w = testing::values_as_double(want), g = testing::values_as_double(got);
  std::vector<size_t> bad;
  if (bitwise) {
    const Tensor gh = got.to(kCpu);
    const size_t width = dtype_size(want.dtype());
    const auto* a = static_cast<const unsigned char*>(want.raw_data());
    const auto* b = static_cast<const unsigned char*>(gh.raw_data());
    for (size_t i = 0; i < w.size(); ++i)
      if (std::memcmp(a + i * width, b + i * width, width) != 0) bad.push_back(i);
    if (!bad.empty()) os << bad.size() << " of " << w.size() << " elements differ in their bits (expected identical)";
  } else {
    double big = per_element ? 1e-6 : 0;  // per element: room only for subnormals (the CPU flushes them to zero)
    if (!per_element)
      for (double v : w)
        if (std::isfinite(v)) big = std::max(big, std::abs(v));
    for (size_t i = 0; i < w.size(); ++i) {
      bool ok;
      if (std::isnan(w[i])) ok = std::isnan(g[i]);
      else if (std::isinf(w[i]) || rtol == 0) ok = g[i] == w[i];
      else ok = std::abs(g[i] - w[i]) <= rtol * (std::abs(w[i]) + big);
      if (!ok) bad.push_back(i);
    }
    if (!bad.empty())
      os << bad.size() << " of " << w.size() << " elements differ by more than " << rtol << " * (|cpu| + " << big << ")";
  }
  for (size_t k = 0; k < bad.size() && k < 5; ++k)
    os << "\n  element " << bad[k] << ": cpu " << w[bad[k]] << ", cuda " << g[bad[k]];
  return os.str();
}

// Tape gradients of reduce_sum(op(x) * w) with respect to every floating input, on `device`.
Outputs tape_gradients(const Case& c, const Inputs& in, DType dt, const Tensor& w, Device device) {
  DeviceScope on(device);
  std::vector<Tensor> sources;
  for (const Tensor& x : in)
    if (is_floating(x.dtype())) sources.push_back(x);
  GradientTape tape;
  for (const Tensor& x : sources) tape.watch(x);
  const Tensor y = c.fn(in, dt).at(0);
  const Tensor loss = ops::reduce_sum(ops::mul(y, w));
  GradientOptions options;
  options.unconnected_gradients = UnconnectedGradients::Zero;
  return tape.gradient(loss, sources, options);
}

// Combinations the CUDA backend may leave to the CPU, each with its reason.
struct CpuOnly {
  OpId op;
  DType dtype;
  const char* reason;
};
// Integer matmul runs on a direct kernel; batch norm has no float64 kernel in cuDNN's NHWC batch norm.
const std::vector<CpuOnly> kCpuOnly = {
    {OpId::fused_batch_norm, DType::Float64, "cuDNN's NHWC batch norm takes no float64 (BatchNormalization composes it)"},
    {OpId::fused_batch_norm_grad, DType::Float64, "cuDNN's NHWC batch norm takes no float64"}};

bool cpu_only(OpId op, DType dt) {
  for (const CpuOnly& e : kCpuOnly)
    if (e.op == op && e.dtype == dt) return true;
  return false;
}

// What one (case, dtype) did: whether the CPU ran it, and any failure.
struct Run {
  bool cpu_ran = false;
  int64_t elements = 0;  // of the inputs and outputs
  int comparisons = 0;
  std::string failure;
};

constexpr int64_t kMaxGradElements = 1 << 17;  // gradients on the smaller cases only (run time)
constexpr int64_t kLargeCase = 1 << 16;        // the table check runs cases this large for one dtype only

// Runs a case at one dtype on the CPU and, when compare_gpu, on cuda:0 with copies of the same inputs.
Run run_case(OpId op, const Case& c, DType dt, bool compare_gpu, std::set<OpId>* seen = nullptr) {
  Run r;
  const random::GeneratorState saved = random::get_global_generator_state();
  struct Restore {
    const random::GeneratorState& s;
    ~Restore() { random::set_global_generator_state(s); }
  } restore{saved};
  Inputs in;
  try {
    DeviceScope on(kCpu);
    in = c.inputs(dt);
  } catch (const std::exception& e) {
    r.failure = std::string("making the inputs threw: ") + e.what();
    return r;
  }
  // The kernel is chosen by the first input's dtype (creation ops: the output's); where's is the bool condition.
  const DType key = in.empty() ? dt : in[0].dtype();
  if (!supports(op, DeviceType::CPU, key)) return r;
  Outputs want;
  try {
    DeviceScope on(kCpu);
    struct Seen {
      explicit Seen(std::set<OpId>* s) { g_seen = s; }
      ~Seen() { g_seen = nullptr; }
    } watch(seen);
    want = c.fn(in, dt);
  } catch (const Error&) {
    return r;  // a combination the CPU refuses (the table check makes sure each case runs for some dtype)
  } catch (const std::exception& e) {
    r.failure = std::string("on the CPU it threw: ") + e.what();
    return r;
  }
  r.cpu_ran = true;
  for (const Tensor& x : in) r.elements += x.num_elements();
  for (const Tensor& y : want) r.elements += y.num_elements();
  if (!compare_gpu || (cpu_only(op, key) && !supports(op, DeviceType::CUDA, key))) return r;

  Inputs gin;
  for (const Tensor& x : in) gin.push_back(x.to(kGpu));
  random::set_global_generator_state(saved);
  Outputs got;
  try {
    DeviceScope on(kGpu);
    got = c.fn(gin, dt);
  } catch (const std::exception& e) {
    r.failure = std::string("on cuda:0 it threw: ") + e.what();
    return r;
  }
  if (got.size() != want.size()) {
    r.failure = "cuda:0 gave " + std::to_string(got.size()) + " outputs, the CPU " + std::to_string(want.size());
    return r;
  }
  for (size_t i = 0; i < want.size(); ++i) {
    ++r.comparisons;
    if (got[i].device() != kGpu) {
      r.failure += "\noutput " + std::to_string(i) + " is on " + got[i].device().to_string() + ", expected cuda:0";
      continue;
    }
    const std::string m = compare(want[i], got[i], rtol_for(want[i].dtype()) * c.tol, c.bitwise, c.per_element);
    if (!m.empty()) r.failure += "\noutput " + std::to_string(i) + ": " + m;
  }

  int64_t elements = 0;
  bool floating_input = false;
  for (const Tensor& x : in) {
    elements += x.num_elements();
    floating_input = floating_input || is_floating(x.dtype());
  }
  if (!op_info(op).differentiable || !c.grad || !floating_input || elements > kMaxGradElements ||
      !is_floating(want[0].dtype()))
    return r;
  const Tensor w = make(want[0].shape(), want[0].dtype(), 999);
  Outputs gc, gg;
  try {
    gc = tape_gradients(c, in, dt, w, kCpu);
  } catch (const Error&) {
    return r;  // no CPU gradient for this combination
  }
  try {
    gg = tape_gradients(c, gin, dt, w.to(kGpu), kGpu);
  } catch (const std::exception& e) {
    r.failure += std::string("\nthe gradient on cuda:0 threw: ") + e.what();
    return r;
  }
  for (size_t i = 0; i < gc.size() && i < gg.size(); ++i) {
    ++r.comparisons;
    // Backward formulas chain several ops: a little more room than one op.
    const std::string m = compare(gc[i], gg[i], rtol_for(gc[i].dtype()) * c.tol * 4, false);
    if (!m.empty()) r.failure += "\ngradient " + std::to_string(i) + ": " + m;
  }
  return r;
}

// Runs every case of the ops of the op_list.def section headed by `first` (tests/support/op_sections.h) on
// both devices, one failure per (case, dtype).
void run_section(OpId first) {
  Tf32Scope tf32(false);
  int comparisons = 0, failures = 0;
  const std::vector<OpId> section = testing::ops_of_section(first);
  for (OpId op : section) {
    auto it = table().find(op);
    if (it == table().end()) continue;  // reported by the table check
    if (!has_kernel(op, DeviceType::CUDA)) {
      ++failures;
      FAIL_CHECK("op " << op_name(op) << ": no CUDA kernel is registered");
      continue;
    }
    for (const Case& c : it->second)
      for (DType dt : c.dtypes) {
        const Run r = run_case(op, c, dt, true);
        comparisons += r.comparisons;
        if (!r.failure.empty()) {
          ++failures;
          FAIL_CHECK("op " << op_name(op) << ", case " << c.name << ", dtype " << dt << ": " << r.failure);
        }
      }
  }
  CHECK(comparisons > 0);
  WARN("ops " << op_name(section.front()) << " .. " << op_name(section.back()) << ": " << comparisons << " CPU/CUDA comparisons, " << failures
              << " (case, dtype) failures");
}

}  // namespace

TEST_CASE("backend cases: every op has cases, each runs its op on the CPU, every CPU dtype is covered",
          "[ops][backend_cases]") {
  const int hook = add_op_hook(&seen_hook);
  int runs = 0;
  for (int i = 0; i < kNumOps; ++i) {
    const OpId op = static_cast<OpId>(i);
    auto it = table().find(op);
    if (it == table().end()) {
      FAIL_CHECK("op " << op_name(op) << " has no case in the CPU/CUDA consistency harness (test_cuda_backend.cpp)");
      continue;
    }
    std::set<DType> dtypes;  // the cases' dtypes the CPU ran (where: the branches', the condition being bool)
    for (const Case& c : it->second) {
      bool ran = false;
      for (DType dt : c.dtypes) {
        std::set<OpId> seen;
        const Run r = run_case(op, c, dt, false, &seen);
        if (!r.failure.empty()) FAIL_CHECK("op " << op_name(op) << ", case " << c.name << ", dtype " << dt << ": " << r.failure);
        if (!r.cpu_ran) continue;
        ran = true;
        ++runs;
        dtypes.insert(dt);
        if (!seen.count(op)) FAIL_CHECK("op " << op_name(op) << ", case " << c.name << ", dtype " << dt << ": never runs the op");
        if (r.elements > kLargeCase) break;  // large cases: one dtype is enough here (the small ones cover every dtype)
      }
      if (!ran) FAIL_CHECK("op " << op_name(op) << ", case " << c.name << ": the CPU runs it for none of its dtypes");
    }
    for (DType dt : kAll)
      if (supports(op, DeviceType::CPU, dt) && !dtypes.count(dt))
        FAIL_CHECK("op " << op_name(op) << ": its CPU kernel takes " << dt << " but no case runs it");
  }
  remove_op_hook(hook);
  CHECK(runs > 1000);
}

// [cuda_build]: worth running in a CUDA build without a GPU too (scripts/gpu_check.sh runs these with [cuda]).
TEST_CASE("CUDA builds register a CUDA kernel for every op and every dtype the CPU kernel takes",
          "[ops][table][cuda_build]") {
  if (!config::is_built_with_cuda()) {
    CHECK(config::list_physical_devices("GPU").empty());
    CHECK(device_count(DeviceType::CUDA) == 0);
    WARN("not built with CUDA: checked only that no GPU is listed");
    return;
  }
  for (int i = 0; i < kNumOps; ++i) {
    const OpId op = static_cast<OpId>(i);
    INFO("op " << op_name(op));
    CHECK(has_kernel(op, DeviceType::CUDA));
    for (DType dt : kAll)
      if (supports(op, DeviceType::CPU, dt) && !supports(op, DeviceType::CUDA, dt) && !cpu_only(op, dt))
        FAIL_CHECK("op " << op_name(op) << ": the CPU kernel takes " << dt
                         << " and the CUDA kernel does not (register it, or add it to kCpuOnly with a reason)");
  }
  for (const CpuOnly& e : kCpuOnly) {
    INFO("allow-listed " << op_name(e.op) << " " << e.dtype << ": " << e.reason);
    CHECK(supports(e.op, DeviceType::CPU, e.dtype));  // an entry for a dtype the CPU does not take is stale
    if (supports(e.op, DeviceType::CUDA, e.dtype))
      WARN("kCpuOnly lists " << op_name(e.op) << " " << e.dtype << ", which the CUDA kernel now takes: remove the entry");
  }
}

namespace {
bool cublaslt_mapped() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find("libcublasLt.so") != std::string::npos) return true;
  return false;
}
}  // namespace

// cuBLASLt is loaded by the first matmul that needs it, not at start: linked, it added about 150 MiB of
// resident memory to every process. Here the first call goes through Ember's forwarder of
// cublasLtGetStatusName (status 0 is CUBLAS_STATUS_SUCCESS), which needs no GPU.
TEST_CASE("CUDA builds load cuBLASLt on first use, not at start", "[ops][cuda_build]") {
  if (!config::is_built_with_cuda()) {
    WARN("not built with CUDA: nothing to load");
    return;
  }
  CHECK_FALSE(cublaslt_mapped());
  auto status_name = reinterpret_cast<const char* (*)(int)>(dlsym(RTLD_DEFAULT, "cublasLtGetStatusName"));
  REQUIRE(status_name != nullptr);
  CHECK(std::string(status_name(0)) == "CUBLAS_STATUS_SUCCESS");
  CHECK(cublaslt_mapped());
}

#define EMBER_CUDA_OR_SKIP()                                                    \
  if (!has_gpu()) {                                                             \
    WARN("no CUDA device (device_count(DeviceType::CUDA) == 0): skipped");      \
    return;                                                                     \
  }

void run_section_on_gpu(OpId first) {
  EMBER_CUDA_OR_SKIP();
  run_section(first);
}

// One test case per section of op_list.def: the sections cover the whole table, so every op's cases run,
// matmul_bias's among them.
#define CUDA_BACKEND_SECTION(title, first) \
  EMBER_OP_SECTION_TEST_CASE("cuda backend matches the CPU: " title, "[cuda][ops]", first, run_section_on_gpu)
CUDA_BACKEND_SECTION("elementwise unary and cast", OpId::neg)
CUDA_BACKEND_SECTION("elementwise binary and ternary", OpId::add)
CUDA_BACKEND_SECTION("reductions", OpId::reduce_sum)
CUDA_BACKEND_SECTION("linear algebra (TF32 off)", OpId::matmul)
CUDA_BACKEND_SECTION("shape and indexing", OpId::reshape)
CUDA_BACKEND_SECTION("creation and random ops", OpId::fill)
CUDA_BACKEND_SECTION("neural network (TF32 off)", OpId::softmax)
CUDA_BACKEND_SECTION("optimizer updates", OpId::apply_adam)
CUDA_BACKEND_SECTION("custom ops", OpId::custom)

TEST_CASE("the CPU/CUDA sections cover op_list.def, each with its test case", "[ops][backend_cases]") {
  testing::check_sections_cover_the_table();
}

// A view can start anywhere in its storage: here float16 operands 2 bytes past an aligned address reach the
// convolution and its gradients (cuDNN may refuse an algorithm for them; the op then runs the direct kernels),
// then copies of them at aligned addresses, then the views again. All agree with the CPU: the plans are cached
// per alignment, so neither kind of call may spoil the other's.
TEST_CASE("cuda conv2d and its gradients take misaligned float16 views and agree with the CPU", "[cuda][ops]") {
  EMBER_CUDA_OR_SKIP();
  const DType dt = DType::Float16;
  const Shape sx{4, 9, 9, 8}, sf{3, 3, 8, 16}, sy{4, 5, 5, 16};
  const ops::Conv2DOptions o{.strides = {2, 2}, .padding = "SAME"};
  // The last n elements of a flat tensor of n + 1, viewed as shape s: one element past the storage's start.
  auto view_of = [](const Tensor& flat, const Shape& s) { return flat.slice_rows(1, 1 + s.num_elements()).view(s); };
  const Tensor fx = make({sx.num_elements() + 1}, dt, 911), ff = make({sf.num_elements() + 1}, dt, 912),
               fy = make({sy.num_elements() + 1}, dt, 913);
  const Tensor x = view_of(fx, sx), f = view_of(ff, sf), dy = view_of(fy, sy);
  Tensor want_y, want_dx, want_df;
  {
    DeviceScope on(kCpu);
    want_y = ops::conv2d(x, f, o);
    want_dx = ops::conv2d_backprop_input(sx, f, dy, o);
    want_df = ops::conv2d_backprop_filter(x, sf, dy, o);
  }
  const Tensor gx = fx.to(kGpu), gf = ff.to(kGpu), gy = fy.to(kGpu);
  const double tol = 3 * rtol_for(dt);
  for (const bool aligned : {false, true, false}) {
    INFO((aligned ? "aligned copies" : "misaligned views"));
    const Tensor xg = aligned ? x.to(kGpu) : view_of(gx, sx), fg = aligned ? f.to(kGpu) : view_of(gf, sf),
                 dyg = aligned ? dy.to(kGpu) : view_of(gy, sy);
    DeviceScope on(kGpu);
    const std::string y = compare(want_y, ops::conv2d(xg, fg, o), tol, false);
    const std::string dx = compare(want_dx, ops::conv2d_backprop_input(sx, fg, dyg, o), tol, false);
    const std::string df = compare(want_df, ops::conv2d_backprop_filter(xg, sf, dyg, o), tol, false);
    INFO("conv2d: " << y << "; backprop input: " << dx << "; backprop filter: " << df);
    CHECK(y.empty());
    CHECK(dx.empty());
    CHECK(df.empty());
  }
}

// TF's default: float32 matmul and convolutions on tensor cores in TF32 (10-bit mantissa inputs).
TEST_CASE("cuda backend with TF32 on stays within 1e-2 of the CPU for float32 matmul and conv2d", "[cuda][ops]") {
  EMBER_CUDA_OR_SKIP();
  Tf32Scope tf32(true);
  const Tensor a = make({512, 1024}, DType::Float32, 501), b = make({1024, 256}, DType::Float32, 502);
  const Tensor x = make({8, 32, 32, 16}, DType::Float32, 503), f = make({3, 3, 16, 32}, DType::Float32, 504);
  Tensor mm_cpu, conv_cpu, mm_gpu, conv_gpu;
  {
    DeviceScope on(kCpu);
    mm_cpu = ops::matmul(a, b);
    conv_cpu = ops::conv2d(x, f, {.padding = "SAME"});
  }
  {
    DeviceScope on(kGpu);
    mm_gpu = ops::matmul(a.to(kGpu), b.to(kGpu));
    conv_gpu = ops::conv2d(x.to(kGpu), f.to(kGpu), {.padding = "SAME"});
  }
  const std::string mm = compare(mm_cpu, mm_gpu, 1e-2, false), conv = compare(conv_cpu, conv_gpu, 1e-2, false);
  INFO("matmul: " << mm);
  CHECK(mm.empty());
  INFO("conv2d: " << conv);
  CHECK(conv.empty());
}
