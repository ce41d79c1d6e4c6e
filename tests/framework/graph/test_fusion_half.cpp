// jit_compile's fused chains over float16 and bfloat16 values (mixed precision): each op computes in float32 and
// rounds to its half type at its end, fused or not, so a fused chain with casts between float32 and the half type
// gives the unfused ops' bits. (Mixed-precision training steps and fit: test_fusion.cpp.)
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <sstream>

#include "framework/ember.h"
#include "framework/ops/fused_elementwise.h"
#include "tests/support/half_testing.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using ember::testing::half_edge_values;
using ember::testing::same_bits;

namespace {

const graph::Graph& graph_of(const auto& f) { return f.concrete_functions().at(0)->graph(); }

}  // namespace

TEST_CASE("jit_compile fuses float16 and bfloat16 chains with their casts, with the unfused ops' bits",
          "[function][jit][mixed_precision]") {
  for (const DType h : {DType::Float16, DType::BFloat16}) {
    INFO(h);
    auto body = [h](const Tensor& x, const Tensor& bias, const Tensor& xh) {
      Tensor a = ops::cast(x, h);                                    // float32 to half: a rounding
      Tensor y = ops::relu(a * 1.5f + bias);                         // half ops, a half bias over the rows
      Tensor z = ops::sigmoid(y) * xh - 0.25f;                       // a half input read whole
      Tensor t = ops::tanh(ops::cast(z, DType::Float32)) * 3.0f;     // back to float32
      Tensor w = ops::cast(ops::cast(t, h), DType::Float32);         // float32 -> half -> float32: a rounding
      Tensor mask = ops::cast(ops::greater(z, Tensor::scalar_of(0.1, h)), DType::Float32);
      Tensor finite = ops::cast(ops::is_finite(ops::exp(y)), DType::Float32);
      return std::make_tuple(w + mask - finite, z, ops::cast(ops::square(ops::cast(t, h)), DType::BFloat16));
    };
    auto jit = ember::function(body, {.jit_compile = true});
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{3, 5}, {257, 33}, {1000, 130}}) {
      INFO(rows << " x " << cols);
      const Tensor x = half_edge_values(rows, cols, 1);
      const Tensor bias = ops::cast(random::normal({cols}, {.seed = 2}), h);
      const Tensor xh = ops::cast(half_edge_values(rows, cols, 3), h);
      auto [e0, e1, e2] = body(x, bias, xh);
      jit(x, bias, xh);  // traces
      auto [j0, j1, j2] = jit(x, bias, xh);
      CHECK(same_bits(j0, e0));
      CHECK(same_bits(j1, e1));
      CHECK(same_bits(j2, e2));
    }
    // One node makes the three outputs: the casts are steps of the chain, none left beside it.
    const graph::Graph& g = graph_of(jit);
    std::ostringstream printed;
    printed << g;
    INFO(printed.str());
    CHECK(g.count(graph::NodeKind::Fused) == 1);
    CHECK(g.nodes.size() == 1);
    CHECK(g.count(OpId::cast) == 0);
  }
}

TEST_CASE("a fused float16 chain rounds as float16 does: ties to even, overflow to infinity", "[function][jit]") {
  // 1 + 2^-11 and 1 + 3 * 2^-11 are ties (to 1 and 1 + 2^-9); 65520 is past the largest finite float16.
  auto half_body = [](const Tensor& x) { return ops::cast(ops::cast(x, DType::Float16) * 1.0f + 0.0f, DType::Float32); };
  auto jit = ember::function(half_body, {.jit_compile = true});
  const Tensor x = Tensor::from_vector<float>({1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 65520.0f});
  jit(x);
  const std::vector<float> got = jit(x).to_vector<float>();
  CHECK(got[0] == 1.0f);
  CHECK(got[1] == 1.0f + 0x1p-9f);
  CHECK(std::isinf(got[2]));
  CHECK(graph_of(jit).count(graph::NodeKind::Fused) == 1);
}

TEST_CASE("where on a half type stays an op of its own; on float32 it fuses", "[function][jit]") {
  for (const DType dtype : {DType::Float32, DType::Float16, DType::BFloat16}) {
    INFO(dtype);
    auto body = [](const Tensor& x) {
      Tensor y = ops::abs(x) * 2.0f;
      return ops::where(ops::greater(y, Tensor::scalar_of(1.0, x.dtype())), y, x) - 1.0f;
    };
    auto jit = ember::function(body, {.jit_compile = true});
    const Tensor x = ops::cast(half_edge_values(9, 7, 4), dtype);
    jit(x);
    CHECK(same_bits(jit(x), body(x)));
    CHECK(graph_of(jit).count(OpId::where) == (dtype == DType::Float32 ? 0u : 1u));
  }
}
