// Walks op_list.def: every differentiable op has a registered backward formula and sample cases, and
// each case's tape gradient matches float64 central differences (tests/support/grad_check.h).
#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

#include "framework/autodiff/grad_registry.h"
#include "framework/ops/dispatch.h"
#include "tests/support/custom_test_ops.h"
#include "tests/support/grad_check.h"
#include "tests/support/op_sections.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using ember::testing::same_bits;
using ember::testing::GradCheckOptions;
using ember::testing::make;
using ember::testing::offset_rows64;
using ember::testing::rand64;
using ember::testing::rand64_away_from_zero;
using ember::testing::TensorFn;
using ember::testing::transposed64;
using ember::testing::uniform_in;

namespace {

using Inputs = std::vector<Tensor>;

struct Case {
  std::string name;
  std::function<Inputs()> inputs;  // float64 (integer/bool where the op takes them)
  TensorFn fn;                     // calls the op's public function
  GradCheckOptions options = {};
};

using Table = std::map<OpId, std::vector<Case>>;

Tensor i64(const std::vector<int64_t>& v, const Shape& shape) { return Tensor::from_vector<int64_t>(v, shape); }

// Values 0.4 * k + offset (+- 0.05), k in [-3, 3]: two such tensors with offsets 0 and 0.2 differ by at
// least 0.1 everywhere, whatever broadcasting pairs up (maximum/minimum away from ties).
Tensor grid64(const Shape& shape, double offset, uint32_t seed) {
  std::vector<double> k = uniform_in(shape.num_elements(), -3.5, 3.5, seed);
  std::vector<double> u = uniform_in(shape.num_elements(), -0.05, 0.05, seed + 1);
  for (size_t i = 0; i < k.size(); ++i) k[i] = 0.4 * std::round(k[i]) + offset + u[i];
  return make(k, shape, DType::Float64);
}

// Unary ops: several shapes and layouts over a domain given by gen(shape, seed).
using Gen = std::function<Tensor(const Shape&, uint32_t)>;
void add_unary(Table& t, OpId op, std::function<Tensor(const Tensor&)> f, Gen gen, GradCheckOptions o = {}) {
  TensorFn fn = [f](const Inputs& in) { return f(in[0]); };
  auto& cases = t[op];
  cases.push_back({"[2,3]", [gen] { return Inputs{gen({2, 3}, 11)}; }, fn, o});
  cases.push_back({"scalar", [gen] { return Inputs{gen({}, 12)}; }, fn, o});
  // The same domain, laid out through a transpose and through a row offset into a bigger tensor.
  cases.push_back({"transposed [3,2]", [gen] { return Inputs{ops::transpose(gen({2, 3}, 13))}; }, fn, o});
  cases.push_back({"row view [2,4]", [gen] { return Inputs{gen({4, 4}, 14).slice_rows(1, 3)}; }, fn, o});
}

Tensor any64(const Shape& s, uint32_t seed) { return rand64(s, seed, -1.5, 1.5); }
Tensor pos64(const Shape& s, uint32_t seed) { return rand64(s, seed, 0.2, 2.0); }
Tensor nonzero64(const Shape& s, uint32_t seed) { return rand64_away_from_zero(s, seed, 0.2, 1.5); }

// Binary ops over broadcasting pairs, the first operand also through a transpose.
void add_binary(Table& t, OpId op, std::function<Tensor(const Tensor&, const Tensor&)> f, Gen ga, Gen gb,
                GradCheckOptions o = {}) {
  TensorFn fn = [f](const Inputs& in) { return f(in[0], in[1]); };
  auto& cases = t[op];
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{2, 3}, {2, 3}}, {{2, 3}, {3}}, {{3}, {2, 3}}, {{2, 1}, {1, 3}}, {{2, 3}, {}}, {{}, {2, 3}}, {{4, 1, 3}, {2, 3}}};
  for (const auto& [sa, sb] : shapes) {
    std::ostringstream name;
    name << sa << " with " << sb;
    cases.push_back({name.str(), [ga, gb, sa = sa, sb = sb] { return Inputs{ga(sa, 21), gb(sb, 22)}; }, fn, o});
  }
  cases.push_back({"transposed [3,2] with [2]",
                   [ga, gb] { return Inputs{ops::transpose(ga({2, 3}, 23)), gb({2}, 24)}; }, fn, o});
}

void add_elementwise(Table& t) {
  add_unary(t, OpId::neg, [](const Tensor& x) { return ops::neg(x); }, any64);
  add_unary(t, OpId::abs, [](const Tensor& x) { return ops::abs(x); }, nonzero64);
  add_unary(t, OpId::exp, [](const Tensor& x) { return ops::exp(x); }, any64);
  add_unary(t, OpId::log, [](const Tensor& x) { return ops::log(x); }, pos64);
  add_unary(t, OpId::log1p, [](const Tensor& x) { return ops::log1p(x); },
            [](const Shape& s, uint32_t seed) { return rand64(s, seed, -0.6, 1.5); });
  add_unary(t, OpId::sqrt, [](const Tensor& x) { return ops::sqrt(x); }, pos64);
  add_unary(t, OpId::rsqrt, [](const Tensor& x) { return ops::rsqrt(x); }, pos64);
  add_unary(t, OpId::square, [](const Tensor& x) { return ops::square(x); }, any64);
  add_unary(t, OpId::reciprocal, [](const Tensor& x) { return ops::reciprocal(x); }, nonzero64);
  add_unary(t, OpId::sin, [](const Tensor& x) { return ops::sin(x); }, any64);
  add_unary(t, OpId::cos, [](const Tensor& x) { return ops::cos(x); }, any64);
  add_unary(t, OpId::tanh, [](const Tensor& x) { return ops::tanh(x); }, any64);
  add_unary(t, OpId::sigmoid, [](const Tensor& x) { return ops::sigmoid(x); }, any64);
  add_unary(t, OpId::relu, [](const Tensor& x) { return ops::relu(x); }, nonzero64);
  // relu6: both kinks (0 and 6) avoided.
  add_unary(t, OpId::relu6, [](const Tensor& x) { return ops::relu6(x); }, [](const Shape& s, uint32_t seed) {
    std::vector<double> v = uniform_in(s.num_elements(), -2, 8, seed);
    for (double& x : v)
      if (std::abs(x) < 0.3 || std::abs(x - 6) < 0.3) x += 0.7;
    return make(v, s, DType::Float64);
  });
  add_unary(t, OpId::elu, [](const Tensor& x) { return ops::elu(x); }, nonzero64);
  add_unary(t, OpId::selu, [](const Tensor& x) { return ops::selu(x); }, nonzero64);
  add_unary(t, OpId::gelu, [](const Tensor& x) { return ops::gelu(x); }, any64);
  t[OpId::gelu].push_back({"approximate", [] { return Inputs{any64({3, 4}, 31)}; },
                           [](const Inputs& in) { return ops::gelu(in[0], true); }});
  add_unary(t, OpId::softplus, [](const Tensor& x) { return ops::softplus(x); }, any64);
  t[OpId::softplus].push_back({"large |x|", [] { return Inputs{make({-30, -12, 12, 30}, {4}, DType::Float64)}; },
                               [](const Inputs& in) { return ops::softplus(in[0]); }});
  add_unary(t, OpId::softsign, [](const Tensor& x) { return ops::softsign(x); }, any64);
  add_unary(t, OpId::swish, [](const Tensor& x) { return ops::swish(x); }, any64);
  // cast: float64 -> float32 -> float64 is the identity up to float32 rounding, so a wide step and a loose
  // tolerance (the op is linear, the step adds no truncation error).
  t[OpId::cast].push_back({"float64 -> float32 -> float64", [] { return Inputs{any64({2, 3}, 41)}; },
                           [](const Inputs& in) { return ops::cast(ops::cast(in[0], DType::Float32), DType::Float64); },
                           {.h = 1e-2, .rtol = 1e-4, .atol = 1e-5}});
  t[OpId::cast].push_back({"float32 -> float64", [] { return Inputs{ops::cast(any64({2, 3}, 42), DType::Float32)}; },
                           [](const Inputs& in) { return ops::cast(in[0], DType::Float64); },
                           {.h = 1e-2, .rtol = 1e-4, .atol = 1e-4}});

  auto bin = [&](OpId op, auto f, Gen ga, Gen gb, GradCheckOptions o = {}) {
    add_binary(t, op, [f](const Tensor& a, const Tensor& b) { return f(a, b); }, ga, gb, o);
  };
  bin(OpId::add, [](const Tensor& a, const Tensor& b) { return ops::add(a, b); }, any64, any64);
  bin(OpId::sub, [](const Tensor& a, const Tensor& b) { return ops::sub(a, b); }, any64, any64);
  bin(OpId::mul, [](const Tensor& a, const Tensor& b) { return ops::mul(a, b); }, any64, any64);
  bin(OpId::div, [](const Tensor& a, const Tensor& b) { return ops::div(a, b); }, any64, nonzero64);
  bin(OpId::div_no_nan, [](const Tensor& a, const Tensor& b) { return ops::div_no_nan(a, b); }, any64, nonzero64);
  bin(OpId::pow, [](const Tensor& a, const Tensor& b) { return ops::pow(a, b); },
      [](const Shape& s, uint32_t seed) { return rand64(s, seed, 0.5, 2.0); }, any64);
  bin(OpId::maximum, [](const Tensor& a, const Tensor& b) { return ops::maximum(a, b); },
      [](const Shape& s, uint32_t seed) { return grid64(s, 0.0, seed); },
      [](const Shape& s, uint32_t seed) { return grid64(s, 0.2, seed); });
  bin(OpId::minimum, [](const Tensor& a, const Tensor& b) { return ops::minimum(a, b); },
      [](const Shape& s, uint32_t seed) { return grid64(s, 0.0, seed); },
      [](const Shape& s, uint32_t seed) { return grid64(s, 0.2, seed); });
  bin(OpId::squared_difference, [](const Tensor& a, const Tensor& b) { return ops::squared_difference(a, b); }, any64,
      any64);
  // Features at least 0.15 from the kink at 0.
  bin(OpId::relu_grad, [](const Tensor& a, const Tensor& b) { return ops::relu_grad(a, b); }, any64,
      [](const Shape& s, uint32_t seed) { return grid64(s, 0.2, seed); });
  // mod: a / b kept at least 0.2 from an integer; b positive and negative.
  TensorFn mod = [](const Inputs& in) { return ops::mod(in[0], in[1]); };
  auto mod_inputs = [](const Shape& sa, std::vector<double> b, const Shape& sb) {
    std::vector<double> k = uniform_in(sa.num_elements(), -3, 3, 51), u = uniform_in(sa.num_elements(), 0.2, 0.8, 52);
    std::vector<double> a(k.size());
    const size_t nb = b.size();
    for (size_t i = 0; i < a.size(); ++i) a[i] = b[i % nb] * (std::floor(k[i]) + u[i]);  // b broadcasts along rows
    return Inputs{make(a, sa, DType::Float64), make(b, sb, DType::Float64)};
  };
  t[OpId::mod].push_back({"[2,3] with [2,3]", [=] { return mod_inputs({2, 3}, {1.7, -1.3, 0.9, 2.1, -0.8, 1.1}, {2, 3}); }, mod});
  t[OpId::mod].push_back({"[2,3] with [3]", [=] { return mod_inputs({2, 3}, {1.7, -1.3, 0.9}, {3}); }, mod});
  t[OpId::mod].push_back({"[2,3] with []", [=] { return mod_inputs({2, 3}, {1.5}, {}); }, mod});

  // where: bool condition (no gradient) broadcast with both branches.
  t[OpId::where].push_back({"cond [2,3], a [2,3], b [3]",
                            [] {
                              return Inputs{Tensor::from_vector<bool>({true, false, true, false, false, true}, {2, 3}),
                                            any64({2, 3}, 61), any64({3}, 62)};
                            },
                            [](const Inputs& in) { return ops::where(in[0], in[1], in[2]); }});
  t[OpId::where].push_back({"cond [3], a [2,1], b []",
                            [] {
                              return Inputs{Tensor::from_vector<bool>({true, false, true}, {3}), any64({2, 1}, 63),
                                            any64({}, 64)};
                            },
                            [](const Inputs& in) { return ops::where(in[0], in[1], in[2]); }});
  // clip_by_value: x on a grid 0.3 k + 0.15 (+- 0.05), bounds multiples of 0.3, so no x sits on a bound.
  t[OpId::clip_by_value].push_back(
      {"x [2,3], lo [], hi [3]",
       [] {
         return Inputs{grid64({2, 3}, 0.15, 71) * 0.75, make({-0.6}, {}, DType::Float64),
                       make({0.6, 0.9, 0.3}, {3}, DType::Float64)};
       },
       [](const Inputs& in) { return ops::clip_by_value(in[0], in[1], in[2]); }});
  t[OpId::clip_by_value].push_back({"x [3,4], constant bounds", [] { return Inputs{grid64({3, 4}, 0.15, 72) * 0.75}; },
                                    [](const Inputs& in) { return ops::clip_by_value(in[0], -0.6, 0.3); }});
}

void add_reduce(Table& t) {
  using R = Tensor (*)(const Tensor&, ops::Axes, bool);
  auto add = [&](OpId op, R r, Gen gen) {
    auto& cases = t[op];
    const std::vector<std::tuple<std::string, ops::Axes, bool>> axes = {
        {"all", ops::Axes{}, false}, {"axis 1", ops::Axes{1}, false}, {"axes {0,2} keepdims", ops::Axes{0, 2}, true},
        {"axis -1", ops::Axes{-1}, false}, {"all keepdims", ops::Axes{}, true}};
    for (const auto& [name, ax, keep] : axes)
      cases.push_back({name, [gen] { return Inputs{gen({2, 3, 4}, 81)}; },
                       [r, ax = ax, keep = keep](const Inputs& in) { return r(in[0], ax, keep); }});
    cases.push_back({"transposed [4,3] axis 0", [gen] { return Inputs{ops::transpose(gen({3, 4}, 82))}; },
                     [r](const Inputs& in) { return r(in[0], ops::Axes{0}, false); }});
  };
  add(OpId::reduce_sum, &ops::reduce_sum, any64);
  add(OpId::reduce_mean, &ops::reduce_mean, any64);
  add(OpId::reduce_max, &ops::reduce_max, any64);  // distinct random values: no ties
  add(OpId::reduce_min, &ops::reduce_min, any64);
  add(OpId::reduce_prod, &ops::reduce_prod, nonzero64);
}

void add_linalg(Table& t) {
  auto mm = [](ops::MatMulOptions o) { return [o](const Inputs& in) { return ops::matmul(in[0], in[1], o); }; };
  auto& c = t[OpId::matmul];
  c.push_back({"[3,4] @ [4,5]", [] { return Inputs{any64({3, 4}, 91), any64({4, 5}, 92)}; }, mm({})});
  c.push_back({"transpose_a", [] { return Inputs{any64({4, 3}, 93), any64({4, 5}, 94)}; }, mm({.transpose_a = true})});
  c.push_back({"transpose_b", [] { return Inputs{any64({3, 4}, 95), any64({5, 4}, 96)}; }, mm({.transpose_b = true})});
  c.push_back({"both transposed", [] { return Inputs{any64({4, 3}, 97), any64({5, 4}, 98)}; },
               mm({.transpose_a = true, .transpose_b = true})});
  c.push_back({"batch [2,3,4] @ [4,5]", [] { return Inputs{any64({2, 3, 4}, 99), any64({4, 5}, 100)}; }, mm({})});
  c.push_back({"batch broadcast [2,1,3,4] @ [3,4,2]", [] { return Inputs{any64({2, 1, 3, 4}, 101), any64({3, 4, 2}, 102)}; },
               mm({})});
  c.push_back({"transposed operands", [] { return Inputs{transposed64({3, 4}, 103), transposed64({4, 2}, 104)}; }, mm({})});
  c.push_back({"row view operand", [] { return Inputs{offset_rows64({3, 4}, 105), any64({4, 2}, 106)}; }, mm({})});
  auto& b = t[OpId::matmul_bias];
  b.push_back({"[3,4] @ [4,5] + bias", [] { return Inputs{any64({3, 4}, 107), any64({4, 5}, 108), any64({5}, 109)}; },
               [](const Inputs& in) { return ops::matmul_bias(in[0], in[1], in[2]); }});
  b.push_back({"transpose_b, fused relu",
               [] { return Inputs{any64({3, 4}, 110), any64({5, 4}, 111), any64({5}, 112)}; },
               [](const Inputs& in) { return ops::matmul_bias_relu(in[0], in[1], in[2], {.transpose_b = true}); }});
}

void add_array(Table& t) {
  auto one = [](auto f) { return [f](const Inputs& in) { return f(in[0]); }; };
  t[OpId::reshape].push_back({"[2,3,4] -> [6,4]", [] { return Inputs{any64({2, 3, 4}, 111)}; },
                              one([](const Tensor& x) { return ops::reshape(x, {6, 4}); })});
  t[OpId::reshape].push_back({"transposed -> [-1]", [] { return Inputs{transposed64({3, 4}, 112)}; },
                              one([](const Tensor& x) { return ops::reshape(x, {-1}); })});
  t[OpId::transpose].push_back({"perm {2,0,1}", [] { return Inputs{any64({2, 3, 4}, 113)}; },
                                one([](const Tensor& x) { return ops::transpose(x, {2, 0, 1}); })});
  t[OpId::transpose].push_back({"default perm", [] { return Inputs{any64({3, 4}, 114)}; },
                                one([](const Tensor& x) { return ops::transpose(x); })});
  t[OpId::concat].push_back({"3 inputs axis 1", [] { return Inputs{any64({2, 3}, 115), any64({2, 1}, 116), any64({2, 2}, 117)}; },
                             [](const Inputs& in) { return ops::concat(in, 1); }});
  t[OpId::concat].push_back({"axis 0, transposed input", [] { return Inputs{any64({1, 3}, 118), transposed64({2, 3}, 119)}; },
                             [](const Inputs& in) { return ops::concat(in, 0); }});
  t[OpId::strided_slice].push_back({"strides 2", [] { return Inputs{any64({4, 5}, 121)}; },
                                    one([](const Tensor& x) { return ops::strided_slice(x, {1, 0}, {4, 5}, {2, 2}); })});
  t[OpId::strided_slice].push_back({"negative stride", [] { return Inputs{any64({4, 5}, 122)}; },
                                    one([](const Tensor& x) { return ops::strided_slice(x, {3, 4}, {0, 0}, {-1, -2}); })});
  t[OpId::strided_slice].push_back(
      {"shrink axis", [] { return Inputs{any64({3, 4}, 123)}; },
       one([](const Tensor& x) { return ops::strided_slice(x, {1, 1}, {2, 3}, {1, 1}, {.shrink_axis_mask = 1}); })});
  t[OpId::strided_slice].push_back({"slice()", [] { return Inputs{any64({3, 4}, 124)}; },
                                    one([](const Tensor& x) { return ops::slice(x, {1, 1}, {2, -1}); })});
  t[OpId::gather].push_back({"axis 0, repeated indices", [] { return Inputs{any64({5, 3}, 131), i64({0, 2, 2, 4}, {4})}; },
                             [](const Inputs& in) { return ops::gather(in[0], in[1]); }});
  t[OpId::gather].push_back({"axis 1, 2-d indices", [] { return Inputs{any64({3, 4}, 132), i64({3, 1, 1, 0}, {2, 2})}; },
                             [](const Inputs& in) { return ops::gather(in[0], in[1], {.axis = 1}); }});
  t[OpId::gather].push_back({"batch_dims 1", [] { return Inputs{any64({2, 4, 3}, 133), i64({0, 3, 3, 1, 2, 1}, {2, 3})}; },
                             [](const Inputs& in) { return ops::gather(in[0], in[1], {.axis = 1, .batch_dims = 1}); }});
  t[OpId::unsorted_segment_sum].push_back(
      {"5 rows into 4 segments", [] { return Inputs{any64({5, 3}, 141), i64({0, 2, 0, 1, 2}, {5})}; },
       [](const Inputs& in) { return ops::unsorted_segment_sum(in[0], in[1], 4); }});
  for (std::string mode : {"CONSTANT", "REFLECT", "SYMMETRIC"})
    t[OpId::pad].push_back({mode, [] { return Inputs{any64({3, 4}, 151)}; }, [mode](const Inputs& in) {
                              return ops::pad(in[0], {{1, 2}, {2, 1}}, {.mode = mode, .constant_values = 0.5});
                            }});
  t[OpId::tile].push_back({"[2,3] x {2,1}", [] { return Inputs{any64({2, 3}, 161)}; },
                           one([](const Tensor& x) { return ops::tile(x, {2, 1}); })});
  t[OpId::tile].push_back({"[1,3] x {3,2}", [] { return Inputs{any64({1, 3}, 162)}; },
                           one([](const Tensor& x) { return ops::tile(x, {3, 2}); })});
  t[OpId::broadcast_to].push_back({"[3] -> [2,3]", [] { return Inputs{any64({3}, 171)}; },
                                   one([](const Tensor& x) { return ops::broadcast_to(x, {2, 3}); })});
  t[OpId::broadcast_to].push_back({"[2,1] -> [3,2,4]", [] { return Inputs{any64({2, 1}, 172)}; },
                                   one([](const Tensor& x) { return ops::broadcast_to(x, {3, 2, 4}); })});
  t[OpId::broadcast_to].push_back({"[] -> [2,2]", [] { return Inputs{any64({}, 173)}; },
                                   one([](const Tensor& x) { return ops::broadcast_to(x, {2, 2}); })});
}

void add_nn(Table& t) {
  for (int64_t axis : {-1, 0}) {
    std::string name = "[3,4] axis " + std::to_string(axis);
    t[OpId::softmax].push_back({name, [] { return Inputs{any64({3, 4}, 181)}; },
                                [axis](const Inputs& in) { return ops::softmax(in[0], axis); }});
    t[OpId::log_softmax].push_back({name, [] { return Inputs{any64({3, 4}, 182)}; },
                                    [axis](const Inputs& in) { return ops::log_softmax(in[0], axis); }});
  }
  // Through dot_product_attention without a mask, which runs the fused kernel; over 64 queries and keys the
  // kernels' blocks take turns.
  auto attention = [](ops::DotProductAttentionOptions o) {
    return [o](const Inputs& in) { return ops::dot_product_attention(in[0], in[1], in[2], o); };
  };
  auto qkv = [](int64_t b, int64_t tq, int64_t tk, int64_t h, int64_t d, int64_t dv, uint32_t seed) {
    return [=] { return Inputs{any64({b, tq, h, d}, seed), any64({b, tk, h, d}, seed + 1), any64({b, tk, h, dv}, seed + 2)}; };
  };
  auto& fa = t[OpId::fused_attention];
  fa.push_back({"[2,3,2,4] keys 5", qkv(2, 3, 5, 2, 4, 3, 185), attention({})});
  fa.push_back({"causal, more queries than keys", qkv(1, 7, 4, 2, 3, 2, 188), attention({.scale = 0.7, .is_causal = true})});
  fa.push_back({"70 queries, 130 keys", qkv(1, 70, 130, 1, 2, 2, 191), attention({})});
  fa.push_back({"70 queries, 130 keys, causal", qkv(1, 70, 130, 1, 2, 2, 194), attention({.is_causal = true})});
  // The fused batch norm: x, scale, offset (and the side input) all get their gradient; the relu's kinks lie far
  // from these values.
  auto bn = [](BatchNormOps f) {
    return [f](const Inputs& in) {
      const std::optional<Tensor> side = f == BatchNormOps::BnAddRelu ? std::optional<Tensor>(in[3]) : std::nullopt;
      return ops::fused_batch_norm(in[0], in[1], in[2], 1e-3, f, side)[0];
    };
  };
  auto bn_inputs = [](const Shape& s, bool side, uint32_t seed) {
    return [=] {
      const Shape c{s[s.rank() - 1]};
      Inputs in{any64(s, seed), any64(c, seed + 1), any64(c, seed + 2)};
      if (side) in.push_back(any64(s, seed + 3));
      return in;
    };
  };
  auto& fbn = t[OpId::fused_batch_norm];
  fbn.push_back({"[3,2,2,4]", bn_inputs({3, 2, 2, 4}, false, 196), bn(BatchNormOps::Bn)});
  fbn.push_back({"[5,3] relu", bn_inputs({5, 3}, false, 200), bn(BatchNormOps::BnRelu)});
  fbn.push_back({"[2,3,2,3] add, relu", bn_inputs({2, 3, 2, 3}, true, 204), bn(BatchNormOps::BnAddRelu)});
  // Whole-sequence LSTM and GRU: every output (the sequence and the final states; not the backward's saved state)
  // reaches the target.
  auto flat = [](const std::vector<Tensor>& r) {
    const Shape& s = r[0].shape();
    std::vector<Tensor> parts{ops::reshape(r[0], {s[0], s[1] * s[2]})};
    parts.insert(parts.end(), r.begin() + 1, r.end() - 1);
    return ops::concat(parts, 1);
  };
  t[OpId::lstm_sequence].push_back(
      {"batch 2, 3 steps, 4 features, 3 units",
       [] {
         return Inputs{any64({2, 3, 4}, 401), any64({2, 3}, 402), any64({2, 3}, 403),
                       any64({4, 12}, 404), any64({3, 12}, 405), any64({12}, 406)};
       },
       [flat](const Inputs& in) { return flat(ops::lstm_sequence(in[0], in[1], in[2], in[3], in[4], in[5])); }});
  // Sequence lengths (a right-padded mask): the steps past each length, and a sequence of none, carry no gradient.
  auto lengths = [] { return Tensor::from_vector<int32_t>({4, 2, 0}, {3}); };
  t[OpId::lstm_sequence].push_back(
      {"sequence lengths 4, 2, 0",
       [lengths] {
         return Inputs{any64({3, 4, 2}, 407), any64({3, 3}, 408), any64({3, 3}, 409), any64({2, 12}, 404),
                       any64({3, 12}, 405), any64({12}, 406), lengths()};
       },
       [flat](const Inputs& in) { return flat(ops::lstm_sequence(in[0], in[1], in[2], in[3], in[4], in[5], in[6])); }});
  for (bool after : {true, false})
    t[OpId::gru_sequence].push_back(
        {after ? "reset_after, sequence lengths 4, 2, 0" : "reset_before, sequence lengths 4, 2, 0",
         [after, lengths] {
           return Inputs{any64({3, 4, 2}, 417), any64({3, 3}, 418), any64({2, 9}, 413), any64({3, 9}, 414),
                         after ? any64({2, 9}, 415) : any64({9}, 416), lengths()};
         },
         [flat, after](const Inputs& in) {
           return flat(ops::gru_sequence(in[0], in[1], in[2], in[3], in[4], after, in[5]));
         }});
  for (bool after : {true, false})
    t[OpId::gru_sequence].push_back(
        {after ? "reset_after, batch 2, 3 steps, 4 features, 3 units" : "reset_before, batch 2, 3 steps",
         [after] {
           return Inputs{any64({2, 3, 4}, 411), any64({2, 3}, 412), any64({4, 9}, 413), any64({3, 9}, 414),
                         after ? any64({2, 9}, 415) : any64({9}, 416)};
         },
         [flat, after](const Inputs& in) { return flat(ops::gru_sequence(in[0], in[1], in[2], in[3], in[4], after)); }});
  auto xent = [](const Inputs& in) { return ops::sparse_softmax_cross_entropy_with_logits(in[1], in[0]); };
  t[OpId::sparse_softmax_cross_entropy_with_logits].push_back(
      {"[3,4], int64 labels", [] { return Inputs{any64({3, 4}, 183), i64({3, 0, 2}, {3})}; }, xent});
  t[OpId::sparse_softmax_cross_entropy_with_logits].push_back(
      {"[2,3,5], int32 labels",
       [] { return Inputs{any64({2, 3, 5}, 184), ops::cast(i64({4, 0, 1, 2, 3, 4}, {2, 3}), DType::Int32)}; }, xent});
  auto conv = [](ops::Conv2DOptions o) { return [o](const Inputs& in) { return ops::conv2d(in[0], in[1], o); }; };
  auto& c = t[OpId::conv2d];
  c.push_back({"VALID", [] { return Inputs{any64({2, 5, 5, 3}, 191), any64({3, 3, 3, 4}, 192)}; }, conv({})});
  c.push_back({"SAME stride 2", [] { return Inputs{any64({1, 6, 5, 3}, 193), any64({3, 2, 3, 2}, 194)}; },
               conv({.strides = {2, 2}, .padding = "SAME"})});
  c.push_back({"dilation 2", [] { return Inputs{any64({1, 6, 6, 2}, 195), any64({2, 2, 2, 3}, 196)}; },
               conv({.dilations = {2, 2}})});
  c.push_back({"groups 2", [] { return Inputs{any64({1, 5, 5, 4}, 197), any64({3, 3, 2, 4}, 198)}; }, conv({})});
  const ops::Conv2DOptions same2{.strides = {2, 2}, .padding = "SAME"};
  t[OpId::conv2d_bias].push_back(
      {"SAME stride 2", [] { return Inputs{any64({1, 6, 5, 3}, 205), any64({3, 2, 3, 2}, 206), any64({2}, 207)}; },
       [same2](const Inputs& in) { return ops::conv2d_bias(in[0], in[1], in[2], same2); }});
  t[OpId::conv2d_bias].push_back(
      {"groups 2", [] { return Inputs{any64({1, 5, 5, 4}, 208), any64({3, 3, 2, 4}, 209), any64({4}, 210)}; },
       [](const Inputs& in) { return ops::conv2d_bias(in[0], in[1], in[2]); }});
  t[OpId::conv2d_bias].push_back(
      {"fused relu", [] { return Inputs{any64({2, 5, 4, 3}, 211), any64({3, 2, 3, 4}, 212), any64({4}, 213)}; },
       [same2](const Inputs& in) { return ops::conv2d_bias_relu(in[0], in[1], in[2], same2); }});
  t[OpId::conv2d_backprop_input].push_back(
      {"SAME stride 2", [] { return Inputs{any64({3, 3, 3, 2}, 201), any64({1, 3, 3, 2}, 202)}; },
       [same2](const Inputs& in) { return ops::conv2d_backprop_input({1, 5, 5, 3}, in[0], in[1], same2); }});
  t[OpId::conv2d_backprop_filter].push_back(
      {"SAME stride 2", [] { return Inputs{any64({1, 5, 5, 3}, 203), any64({1, 3, 3, 2}, 204)}; },
       [same2](const Inputs& in) { return ops::conv2d_backprop_filter(in[0], {3, 3, 3, 2}, in[1], same2); }});

  // Random distinct values: no ties inside a window.
  struct P {
    std::string name;
    std::array<int64_t, 2> k;
    ops::Pool2DOptions o;
  };
  const std::vector<P> pools = {{"2x2 VALID", {2, 2}, {.strides = {2, 2}}},
                                {"3x3 SAME stride 1", {3, 3}, {.padding = "SAME"}},
                                {"3x3 SAME stride 2", {3, 3}, {.strides = {2, 2}, .padding = "SAME"}}};
  for (const P& p : pools) {
    t[OpId::max_pool2d].push_back({p.name, [] { return Inputs{any64({2, 5, 5, 2}, 211)}; },
                                   [p](const Inputs& in) { return ops::max_pool2d(in[0], p.k, p.o); }});
    t[OpId::avg_pool2d].push_back({p.name, [] { return Inputs{any64({2, 5, 5, 2}, 212)}; },
                                   [p](const Inputs& in) { return ops::avg_pool2d(in[0], p.k, p.o); }});
    // The pooling gradients as functions of their own inputs (second-order pooling gradients).
    t[OpId::max_pool2d_grad].push_back({p.name,
                                        [p] {
                                          Tensor x = any64({1, 5, 5, 2}, 213);
                                          Tensor y = ops::max_pool2d(x, p.k, p.o);
                                          return Inputs{x, y, any64(y.shape(), 214)};
                                        },
                                        [p](const Inputs& in) { return ops::max_pool2d_grad(in[0], in[1], in[2], p.k, p.o); }});
    t[OpId::avg_pool2d_grad].push_back({p.name,
                                        [p] {
                                          Tensor y = ops::avg_pool2d(ops::zeros({1, 5, 5, 2}, DType::Float64), p.k, p.o);
                                          return Inputs{any64(y.shape(), 215)};
                                        },
                                        [p](const Inputs& in) { return ops::avg_pool2d_grad({1, 5, 5, 2}, in[0], p.k, p.o); }});
  }
}

// custom: the tests' custom op (tests/support/custom_test_ops.h), through the gradient registered with it.
void add_custom(Table& t) {
  for (int64_t shift : {1, -4})
    t[OpId::custom].push_back({"test_roll by " + std::to_string(shift) + " times x",
                               [] { return Inputs{any64({2, 3}, 501)}; },
                               [shift](const Inputs& in) { return testing::test_roll(in[0], shift) * in[0]; }});
  t[OpId::custom].push_back({"test_roll of a scalar", [] { return Inputs{any64({}, 502)}; },
                             [](const Inputs& in) { return testing::test_roll(in[0], 3); }});
}

const Table& table() {
  static const Table t = [] {
    Table t;
    add_elementwise(t);
    add_reduce(t);
    add_linalg(t);
    add_array(t);
    add_nn(t);
    add_custom(t);
    return t;
  }();
  return t;
}

// Records which ops a case's forward runs, to catch a case that never reaches its op.
std::set<OpId>* g_seen = nullptr;
void seen_hook(const OpRecord& r) {
  if (g_seen) g_seen->insert(r.op);
}

// Runs every case of the differentiable ops of the section headed by `first`, failing with the op and
// case named; a differentiable op without a case fails here too.
void run_section(OpId first) {
  for (OpId op : testing::ops_of_section(first)) {
    if (!op_info(op).differentiable) continue;
    auto it = table().find(op);
    if (it == table().end()) {
      FAIL_CHECK("op " << op_name(op) << ": no grad-check case");
      continue;
    }
    for (const Case& c : it->second) {
      Inputs in = c.inputs();
      testing::GradCheckResult r = testing::grad_check(c.fn, in, c.options);
      INFO("op " << op_name(op) << ", case " << c.name << ":\n" << r.message);
      CHECK(r.ok);
    }
  }
}

}  // namespace

TEST_CASE("every differentiable op has a gradient formula and grad-check cases", "[autodiff][grad_check]") {
  int differentiable = 0;
  for (int i = 0; i < kNumOps; ++i) {
    const OpId op = static_cast<OpId>(i);
    if (!op_info(op).differentiable) {
      CHECK(table().count(op) == 0);  // a case for a NoDiff op means the table and op_list.def disagree
      continue;
    }
    ++differentiable;
    INFO("op " << op_name(op));
    CHECK(gradient_function(op) != nullptr);
    CHECK(table().count(op) == 1);
  }
  CHECK(differentiable > 50);
}

TEST_CASE("each grad-check case runs the op it is filed under", "[autodiff][grad_check]") {
  int hook = add_op_hook(&seen_hook);
  for (const auto& [op, cases] : table())
    for (const Case& c : cases) {
      std::set<OpId> seen;
      g_seen = &seen;
      Inputs in = c.inputs();
      seen.clear();
      c.fn(in);
      g_seen = nullptr;
      INFO("op " << op_name(op) << ", case " << c.name);
      CHECK(seen.count(op) == 1);
    }
  remove_op_hook(hook);
}

// One test case per section of op_list.def (tests/support/op_sections.h): the sections cover the whole
// table, so every differentiable op's cases run, matmul_bias's (Dense's backward) among them.
#define GRAD_CHECK_SECTION(title, first) \
  EMBER_OP_SECTION_TEST_CASE("grad check: " title, "[autodiff][grad_check]", first, run_section)
GRAD_CHECK_SECTION("elementwise unary", OpId::neg)
GRAD_CHECK_SECTION("elementwise binary and ternary", OpId::add)
GRAD_CHECK_SECTION("reductions", OpId::reduce_sum)
GRAD_CHECK_SECTION("linear algebra", OpId::matmul)
GRAD_CHECK_SECTION("shape and indexing", OpId::reshape)
GRAD_CHECK_SECTION("creation", OpId::fill)
GRAD_CHECK_SECTION("neural network", OpId::softmax)
GRAD_CHECK_SECTION("optimizer updates", OpId::apply_adam)
GRAD_CHECK_SECTION("custom ops", OpId::custom)

TEST_CASE("the grad-check sections cover op_list.def, each with its test case", "[autodiff][grad_check]") {
  testing::check_sections_cover_the_table();
}

// Backward formulas are eager ops, so a nested tape differentiates them again.
TEST_CASE("grad check: second-order gradients through nested tapes", "[autodiff][grad_check]") {
  const std::vector<OpId> ops_to_check = {OpId::mul, OpId::div, OpId::exp, OpId::log, OpId::sqrt, OpId::tanh,
                                          OpId::sigmoid, OpId::softplus, OpId::pow, OpId::reduce_mean,
                                          OpId::matmul, OpId::softmax, OpId::log_softmax,
                                          OpId::sparse_softmax_cross_entropy_with_logits, OpId::conv2d,
                                          OpId::max_pool2d, OpId::gather, OpId::fused_attention,
                                          OpId::fused_batch_norm};
  for (OpId op : ops_to_check) {
    const Case& c = table().at(op).front();
    Inputs in = c.inputs();
    for (size_t k = 0; k < in.size(); ++k) {
      if (!is_floating(in[k].dtype())) continue;
      GradCheckOptions o = c.options;
      o.rtol = 1e-5;
      o.atol = 1e-6;
      testing::GradCheckResult r = testing::grad_check(testing::gradient_of(c.fn, k), in, o);
      INFO("op " << op_name(op) << ", case " << c.name << ", d/dinputs of the gradient for input " << k << ":\n"
                 << r.message);
      CHECK(r.ok);
    }
  }
}

// Composite ops are checked through their primitives; a few end to end as a guard on the front ends.
TEST_CASE("grad check: composite ops", "[autodiff][grad_check]") {
  auto check = [](const std::string& what, TensorFn f, Inputs in) { testing::check_gradients(what, f, in); };
  check("reduce_logsumexp", [](const Inputs& in) { return ops::reduce_logsumexp(in[0], 1); }, {any64({3, 4}, 301)});
  check("reduce_variance", [](const Inputs& in) { return ops::reduce_variance(in[0], 0); }, {any64({3, 4}, 302)});
  check("reduce_std", [](const Inputs& in) { return ops::reduce_std(in[0]); }, {any64({3, 4}, 303)});
  check("stack + split", [](const Inputs& in) { return ops::split(ops::stack({in[0], in[1]}, 1), 2, 0)[1]; },
        {any64({4, 3}, 304), any64({4, 3}, 305)});
  check("expand_dims + squeeze", [](const Inputs& in) { return ops::squeeze(ops::expand_dims(in[0], 1)) * in[0]; },
        {any64({3}, 306)});
  check("softmax cross-entropy",
        [](const Inputs& in) {
          Tensor labels = ops::one_hot(Tensor::from_vector<int64_t>({1, 0, 3}, {3}), 4, {.dtype = DType::Float64});
          return ops::reduce_mean(-ops::reduce_sum(labels * ops::log_softmax(in[0]), -1));
        },
        {any64({3, 4}, 307)});
  check("silu", [](const Inputs& in) { return ops::silu(in[0]); }, {any64({5}, 308)});
}

// The harness itself: a wrong formula, a formula with the wrong shape and a missing one are all caught.
namespace {
std::vector<Tensor> wrong_exp_grad(const GradContext& ctx) { return {ctx.grads[0] * ctx.inputs[0]}; }
std::vector<Tensor> misshapen_exp_grad(const GradContext& ctx) { return {ops::reduce_sum(ctx.grads[0])}; }
}  // namespace

TEST_CASE("grad check catches wrong, misshapen and missing formulas", "[autodiff][grad_check]") {
  const GradFn original = gradient_function(OpId::exp);
  TensorFn f = [](const Inputs& in) { return ops::exp(in[0]); };
  Inputs in{any64({2, 3}, 401)};
  REQUIRE(testing::grad_check(f, in).ok);
  register_gradient(OpId::exp, &wrong_exp_grad);
  testing::GradCheckResult wrong = testing::grad_check(f, in);
  register_gradient(OpId::exp, &misshapen_exp_grad);
  testing::GradCheckResult misshapen = testing::grad_check(f, in);
  register_gradient(OpId::exp, nullptr);
  testing::GradCheckResult missing = testing::grad_check(f, in);
  register_gradient(OpId::exp, original);
  CHECK_FALSE(wrong.ok);
  CHECK_THAT(wrong.message, Catch::Contains("element 0: tape"));
  CHECK_FALSE(misshapen.ok);
  CHECK_THAT(misshapen.message, Catch::Contains("shape"));
  CHECK_FALSE(missing.ok);
  CHECK_THAT(missing.message, Catch::Contains("no gradient formula"));
  CHECK(testing::grad_check(f, in).ok);
}

namespace {
// The op's output and its inputs' gradients (of the output's sum), under a tape: what a traced training
// step computes of it. Inputs without a gradient (integer indices) are left out.
std::vector<Tensor> value_and_gradients(const TensorFn& fn, const Inputs& in) {
  GradientTape tape;
  for (const Tensor& t : in)
    if (is_floating(t.dtype())) tape.watch(t);
  Tensor y = fn(in);
  std::vector<Tensor> out{y};
  std::vector<Tensor> floating;
  for (const Tensor& t : in)
    if (is_floating(t.dtype())) floating.push_back(t);
  for (const Tensor& g : tape.gradient(ops::reduce_sum(y), floating))
    if (g.defined()) out.push_back(g);
  return out;
}
}  // namespace

// Graph mode replays each op with the attributes its front end resolved while tracing: the same kernels on
// the same values, so the same bits, forward and backward.
TEST_CASE("every differentiable op gives eager's bits through ember::function, forward and gradient",
          "[autodiff][function]") {
  for (const auto& [op, cases] : table())
    for (const Case& c : cases) {
      INFO("op " << op_name(op) << ", case " << c.name);
      const Inputs in = c.inputs();
      const std::vector<Tensor> eager = value_and_gradients(c.fn, in);
      auto f = ember::function([&c](const std::vector<Tensor>& xs) { return value_and_gradients(c.fn, xs); });
      f(in);                                         // traces
      const std::vector<Tensor> replayed = f(in);  // replays
      CHECK(f.tracing_count() == 1);
      REQUIRE(replayed.size() == eager.size());
      for (size_t i = 0; i < eager.size(); ++i) CHECK(same_bits(replayed[i], eager[i]));
    }
}
