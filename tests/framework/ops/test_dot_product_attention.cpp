// ops::dot_product_attention: values against a direct float64 loop (scale, bias, mask, causal), Keras's rule for a
// query whose every key is masked, float64 central-difference gradients, graph-mode tracing and errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "framework/ember.h"
#include "framework/ops/dispatch.h"
#include "tests/support/grad_check.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using namespace ember::testing;

namespace {

// softmax(scale * q.k + bias, masked) . v, one (batch, head, query) row at a time. mask[b][t][s] (shared over heads).
std::vector<double> reference(const Tensor& q, const Tensor& k, const Tensor& v, double scale,
                              const std::vector<double>& bias, const std::vector<int>& mask, bool causal) {
  const Shape &qs = q.shape(), &ks = k.shape();
  const int64_t B = qs[0], T = qs[1], H = qs[2], D = qs[3], S = ks[1], Dv = v.shape()[3];
  const std::vector<double> qv = values_as_double(q), kv = values_as_double(k), vv = values_as_double(v);
  std::vector<double> out(B * T * H * Dv);
  const double neg = -0.7 * std::numeric_limits<double>::max();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t) {
        std::vector<double> s(S);
        double mx = -INFINITY;
        for (int64_t j = 0; j < S; ++j) {
          double d = 0;
          for (int64_t c = 0; c < D; ++c) d += qv[((b * T + t) * H + h) * D + c] * kv[((b * S + j) * H + h) * D + c];
          d *= scale;
          if (!bias.empty()) d += bias[t * S + j];
          const bool keep = (mask.empty() || mask[(b * T + t) * S + j]) && (!causal || j <= t);
          s[j] = keep ? d : neg;
          mx = std::max(mx, s[j]);
        }
        double z = 0;
        for (double& x : s) z += (x = std::exp(x - mx));
        for (int64_t c = 0; c < Dv; ++c) {
          double acc = 0;
          for (int64_t j = 0; j < S; ++j) acc += s[j] / z * vv[((b * S + j) * H + h) * Dv + c];
          out[((b * T + t) * H + h) * Dv + c] = acc;
        }
      }
  return out;
}

void check_close(const Tensor& got, const std::vector<double>& want, double tol) {
  const std::vector<double> g = values_as_double(got);
  REQUIRE(g.size() == want.size());
  for (size_t i = 0; i < g.size(); ++i) CHECK(g[i] == Approx(want[i]).margin(tol));
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "(no InvalidArgument)";
}

}  // namespace

TEST_CASE("dot_product_attention matches a direct computation", "[ops][attention]") {
  const Tensor q = rand64({2, 3, 2, 4}, 1), k = rand64({2, 5, 2, 4}, 2), v = rand64({2, 5, 2, 3}, 3);
  SECTION("default scale 1/sqrt(head_dim)") {
    check_close(ops::dot_product_attention(q, k, v), reference(q, k, v, 0.5, {}, {}, false), 1e-12);
  }
  SECTION("scale, bias and causal") {
    const std::vector<double> bias = uniform_in(15, -1, 1, 4);
    Tensor b = make(bias, {3, 5}, DType::Float64);
    check_close(ops::dot_product_attention(q, k, v, {.bias = b, .scale = 0.3, .is_causal = true}),
                reference(q, k, v, 0.3, bias, {}, true), 1e-12);
  }
  SECTION("a boolean mask (batch, 1, query, key), and a 0/1 one") {
    std::vector<int> m(2 * 3 * 5);
    std::vector<double> md(m.size());
    for (size_t i = 0; i < m.size(); ++i) md[i] = m[i] = (i * 7 % 3) != 0;
    const std::vector<double> want = reference(q, k, v, 0.5, {}, m, false);
    Tensor as_int = make(md, {2, 1, 3, 5}, DType::Int32);
    check_close(ops::dot_product_attention(q, k, v, {.mask = ops::cast(as_int, DType::Bool)}), want, 1e-12);
    check_close(ops::dot_product_attention(q, k, v, {.mask = as_int}), want, 1e-12);
  }
  SECTION("float32 agrees with float64") {
    Tensor f = ops::dot_product_attention(ops::cast(q, DType::Float32), ops::cast(k, DType::Float32),
                                          ops::cast(v, DType::Float32), {.is_causal = true});
    CHECK(f.dtype() == DType::Float32);
    check_close(f, reference(q, k, v, 0.5, {}, {}, true), 1e-6);
  }
}

TEST_CASE("a query whose every key is masked attends uniformly, as in Keras", "[ops][attention]") {
  const Tensor q = rand64({1, 2, 1, 3}, 5), k = rand64({1, 4, 1, 3}, 6), v = rand64({1, 4, 1, 2}, 7);
  // Query 0 sees nothing; query 1 sees keys 1 and 3.
  Tensor mask = ops::cast(make({0, 0, 0, 0, 0, 1, 0, 1}, {1, 1, 2, 4}, DType::Float64), DType::Bool);
  const std::vector<double> out = values_as_double(ops::dot_product_attention(q, k, v, {.mask = mask}));
  const std::vector<double> vv = values_as_double(v);
  for (int c = 0; c < 2; ++c) CHECK(out[c] == Approx((vv[c] + vv[2 + c] + vv[4 + c] + vv[6 + c]) / 4).margin(1e-12));
  for (double x : out) CHECK(std::isfinite(x));
}

TEST_CASE("dot_product_attention's gradients match float64 central differences", "[ops][attention][grad]") {
  const std::vector<Tensor> in = {rand64({2, 3, 2, 3}, 11), rand64({2, 4, 2, 3}, 12), rand64({2, 4, 2, 2}, 13)};
  SECTION("unmasked") {
    auto r = grad_check([](const std::vector<Tensor>& x) { return ops::dot_product_attention(x[0], x[1], x[2]); }, in);
    INFO(r.message);
    CHECK(r.ok);
  }
  SECTION("causal, with a mask that hides a whole row") {
    Tensor mask = ops::cast(make({0, 0, 0, 0, 1, 1, 0, 1, 1, 1, 1, 1}, {1, 1, 3, 4}, DType::Float64), DType::Bool);
    auto r = grad_check(
        [&](const std::vector<Tensor>& x) {
          return ops::dot_product_attention(x[0], x[1], x[2], {.mask = mask, .is_causal = true});
        },
        in);
    INFO(r.message);
    CHECK(r.ok);
  }
  SECTION("with respect to the bias") {
    std::vector<Tensor> with_bias = in;
    with_bias.push_back(rand64({2, 1, 3, 4}, 14));
    auto r = grad_check(
        [](const std::vector<Tensor>& x) { return ops::dot_product_attention(x[0], x[1], x[2], {.bias = x[3]}); },
        with_bias);
    INFO(r.message);
    CHECK(r.ok);
  }
}

TEST_CASE("dot_product_attention traces into graph mode", "[ops][attention][function]") {
  const Tensor q = ops::cast(rand64({2, 3, 2, 4}, 21), DType::Float32);
  const Tensor k = ops::cast(rand64({2, 3, 2, 4}, 22), DType::Float32);
  const Tensor v = ops::cast(rand64({2, 3, 2, 4}, 23), DType::Float32);
  auto f = ember::function([](const Tensor& a, const Tensor& b, const Tensor& c) {
    return ops::dot_product_attention(a, b, c, {.is_causal = true});
  });
  const Tensor eager = ops::dot_product_attention(q, k, v, {.is_causal = true});
  check_close(f(q, k, v), values_as_double(eager), 1e-6);
  CHECK(f.tracing_count() == 1);
}

TEST_CASE("dot_product_attention rejects bad shapes with clear errors", "[ops][attention]") {
  const Tensor q = rand64({2, 3, 2, 4}, 1), k = rand64({2, 5, 2, 4}, 2), v = rand64({2, 5, 2, 3}, 3);
  CHECK(error_of([&] { ops::dot_product_attention(rand64({3, 2, 4}, 1), k, v); }).find("rank 4") != std::string::npos);
  CHECK(error_of([&] { ops::dot_product_attention(q, rand64({2, 5, 2, 3}, 2), v); }).find("head_dim") !=
        std::string::npos);
  CHECK(error_of([&] { ops::dot_product_attention(q, k, rand64({2, 4, 2, 3}, 3)); }).find("length") !=
        std::string::npos);
  Tensor bad_mask = ops::cast(ops::ones({2, 1, 3, 4}), DType::Bool);
  CHECK(error_of([&] { ops::dot_product_attention(q, k, v, {.mask = bad_mask}); }).find("does not broadcast") !=
        std::string::npos);
}

namespace {

int g_fused_runs = 0;
void count_fused(const OpRecord& r) { g_fused_runs += r.op == OpId::fused_attention; }

// The attention and the gradients of sum(attention * w) with respect to q, k and v.
std::vector<Tensor> value_and_grads(const std::vector<Tensor>& in, const ops::DotProductAttentionOptions& o) {
  GradientTape tape;
  for (const Tensor& x : in) tape.watch(x);
  const Tensor y = ops::dot_product_attention(in[0], in[1], in[2], o);
  const Tensor w = make(uniform_in(y.num_elements(), -1, 1, 99), y.shape(), y.dtype());
  std::vector<Tensor> out{y};
  for (const Tensor& g : tape.gradient(ops::reduce_sum(y * w), in)) out.push_back(g);
  return out;
}

}  // namespace

TEST_CASE("dot_product_attention without a mask runs the fused kernel, equal to the composite", "[ops][attention]") {
  // 70 queries and 130 keys: the kernels' 64-row blocks take turns, the last ones partly full.
  const Tensor mask_all = ops::cast(ops::ones({1, 1, 1, 1}), DType::Bool);  // forces the composite path
  for (const DType dt : {DType::Float32, DType::Float64}) {
    const std::vector<Tensor> in = {ops::cast(rand64({2, 70, 3, 8}, 31), dt), ops::cast(rand64({2, 130, 3, 8}, 32), dt),
                                    ops::cast(rand64({2, 130, 3, 5}, 33), dt)};
    const double tol = dt == DType::Float32 ? 2e-5 : 1e-12;
    for (const bool causal : {false, true}) {
      INFO("dtype " << dt << ", causal " << causal);
      g_fused_runs = 0;
      const int hook = add_op_hook(&count_fused);
      const std::vector<Tensor> fused = value_and_grads(in, {.scale = 0.3, .is_causal = causal});
      const int fused_runs = g_fused_runs;
      const std::vector<Tensor> composite = value_and_grads(in, {.mask = mask_all, .scale = 0.3, .is_causal = causal});
      remove_op_hook(hook);
      CHECK(fused_runs == 1);
      CHECK(g_fused_runs == 1);  // none on the masked call
      REQUIRE(fused.size() == 4);
      for (size_t i = 0; i < fused.size(); ++i) {
        INFO("output " << i << " (0: attention, then d query, d key, d value)");
        CHECK(fused[i].shape() == composite[i].shape());
        CHECK(max_abs_diff(fused[i], composite[i]) < tol);
      }
    }
  }
}

TEST_CASE("fused_attention saves each query's logsumexp of its scaled scores", "[ops][attention]") {
  const Tensor q = rand64({2, 5, 3, 4}, 41), k = rand64({2, 6, 3, 4}, 42), v = rand64({2, 6, 3, 2}, 43);
  for (const bool causal : {false, true}) {
    const std::vector<Tensor> out = ops::fused_attention(q, k, v, 0.4, causal);
    REQUIRE(out.size() == 2);
    CHECK(out[1].shape() == Shape{2, 3, 5});
    Tensor scores = ops::matmul(ops::transpose(q, {0, 2, 1, 3}), ops::transpose(k, {0, 2, 3, 1})) * 0.4;
    if (causal) {
      std::vector<double> tril;
      for (int i = 0; i < 5; ++i)
        for (int j = 0; j < 6; ++j) tril.push_back(j <= i ? 0 : -1e300);
      scores = scores + make(tril, {5, 6}, DType::Float64);
    }
    CHECK(max_abs_diff(out[1], ops::reduce_logsumexp(scores, -1)) < 1e-12);
  }
}

TEST_CASE("dot_product_attention computes float16 and bfloat16 inputs in float32", "[ops][attention]") {
  const Tensor q = rand64({1, 9, 2, 4}, 51), k = rand64({1, 7, 2, 4}, 52), v = rand64({1, 7, 2, 3}, 53);
  for (const DType dt : {DType::Float16, DType::BFloat16}) {
    INFO("dtype " << dt);
    const Tensor y = ops::dot_product_attention(ops::cast(q, dt), ops::cast(k, dt), ops::cast(v, dt), {.is_causal = true});
    CHECK(y.dtype() == dt);
    check_close(y, reference(ops::cast(ops::cast(q, dt), DType::Float64), ops::cast(ops::cast(k, dt), DType::Float64),
                             ops::cast(ops::cast(v, dt), DType::Float64), 0.5, {}, {}, true),
                dt == DType::Float16 ? 2e-3 : 2e-2);
  }
}

TEST_CASE("fused_attention rejects what its kernel does not take", "[ops][attention]") {
  const Tensor q = rand64({1, 3, 1, 2}, 61);
  const Tensor qi = ops::cast(q, DType::Int32);
  CHECK(error_of([&] { ops::fused_attention(qi, qi, qi, 1.0, false); }).find("floating") != std::string::npos);
  const Tensor qh = ops::cast(q, DType::Float16);
  CHECK(error_of([&] { ops::fused_attention(qh, qh, qh, 1.0, false); }).find("float32 or float64") != std::string::npos);
  const Tensor none = rand64({1, 0, 1, 2}, 62);
  CHECK(error_of([&] { ops::fused_attention(q, none, none, 1.0, false); }).find("no keys") != std::string::npos);
  const std::vector<Tensor> f = ops::fused_attention(q, q, q, 1.0, false);
  CHECK(error_of([&] { ops::fused_attention_grad(q, q, q, f[0], f[0], f[0], 1.0, false); }).find("logsumexp") !=
        std::string::npos);
}
