// store_half_in_float32: on a CPU whose half products compute as float32's, traced float16 and bfloat16 matmuls run
// as float32's on float32 buffers holding half values, each product rounded to its type and back in one pass. The
// values are the half ops' to the bit: each op here against eager execution, with NaN, infinities, subnormals, ties
// and overflow among the operands, and mixed-precision training (fit, with a loss scale optimizer under
// mixed_float16) against eager training.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <limits>
#include <sstream>

#include "framework/ember.h"
#include "framework/graph/passes.h"
#include "framework/ops/half_products.h"
#include "tests/support/half_testing.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using ember::testing::half_edge_values;
using ember::testing::same_bits;

namespace {

const graph::Graph& graph_of(const auto& f) { return f.concrete_functions().at(0)->graph(); }

// How many matmuls of the graph compute in float32, and how many in a half type.
std::pair<size_t, size_t> matmuls(const graph::Graph& g) {
  size_t f32 = 0, half = 0;
  for (const graph::Node& n : g.nodes)
    if (n.kind == graph::NodeKind::Op && (n.op == OpId::matmul || n.op == OpId::matmul_bias))
      ++(g.values[static_cast<size_t>(n.outputs[0])].dtype == DType::Float32 ? f32 : half);
  return {f32, half};
}

struct Threads {
  int before = config::get_intra_op_parallelism_threads();
  explicit Threads(int n) { config::set_intra_op_parallelism_threads(n); }
  ~Threads() { config::set_intra_op_parallelism_threads(before); }
};

struct PolicyScope {
  explicit PolicyScope(const std::string& name) { mixed_precision::set_global_policy(name); }
  ~PolicyScope() { mixed_precision::set_global_policy("float32"); }
};

}  // namespace

TEST_CASE("traced half matmuls run in float32 storage with the half ops' bits", "[function][mixed_precision]") {
  for (const DType h : {DType::Float16, DType::BFloat16}) {
    if (!ops::cpu_matmul_widens_half(h)) continue;  // oneDNN's native bf16 kernels: the pass leaves them
    for (const int threads : {1, 2}) {
      INFO(h << ", " << threads << " threads");
      Threads scope(threads);
      // Products of every transposition, chained (a product's result read by products, by a half op, returned as
      // half and cast to float32), with bias and relu; float32 and half inputs.
      auto body = [h](const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& vh) {
        const Tensor xh = ops::cast(x, h), wh = ops::cast(w, h), bh = ops::cast(b, h);
        const Tensor y = ops::matmul_bias_relu(xh, wh, bh);                      // (m, n)
        const Tensor z = ops::matmul_bias(y, vh, bh, {.transpose_b = true});     // (m, n)
        const Tensor gk = ops::matmul(xh, z, {.transpose_a = true});             // (k, n)
        const Tensor gi = ops::matmul(z, wh, {.transpose_b = true});             // (m, k)
        const Tensor tt = ops::matmul(wh, xh, {.transpose_a = true, .transpose_b = true});  // (n, m)
        const Tensor s = ops::sigmoid(z);                                       // a half op reads a product
        return std::make_tuple(ops::cast(gk, DType::Float32), gi, ops::cast(tt, DType::Float32),
                               ops::cast(ops::matmul(s, vh), DType::Float32));
      };
      auto traced = ember::function(body);
      auto jit = ember::function(body, {.jit_compile = true});  // the pass, then fuse_elementwise
      for (auto [m, k, n] : {std::tuple<int64_t, int64_t, int64_t>{5, 7, 3}, {64, 40, 33}}) {
        INFO(m << " x " << k << " x " << n);
        const Tensor x = half_edge_values(m, k, 1) * 0.25f;
        const Tensor w = half_edge_values(k, n, 2);
        const Tensor b = random::normal({n}, {.seed = 3});
        const Tensor vh = ops::cast(half_edge_values(n, n, 4), h);
        auto [e0, e1, e2, e3] = body(x, w, b, vh);
        traced(x, w, b, vh);  // traces
        auto [t0, t1, t2, t3] = traced(x, w, b, vh);
        CHECK(same_bits(t0, e0));
        CHECK(same_bits(t1, e1));
        CHECK(same_bits(t2, e2));
        CHECK(same_bits(t3, e3));
        jit(x, w, b, vh);
        auto [j0, j1, j2, j3] = jit(x, w, b, vh);
        CHECK(same_bits(j0, e0));
        CHECK(same_bits(j1, e1));
        CHECK(same_bits(j2, e2));
        CHECK(same_bits(j3, e3));
      }
      const graph::Graph& g = graph_of(traced);
      std::ostringstream printed;
      printed << g;
      INFO(printed.str());
      CHECK(matmuls(g) == std::pair<size_t, size_t>{6, 0});
    }
  }
}

TEST_CASE("a fused round trip through a half type is one pass with the casts' bits", "[function][jit]") {
  // jit_compile fuses cast(cast(x, half), float32) into the chain the pass makes, which the CPU runs as one vectorised
  // pass: NaN payloads (quiet and signalling, both signs), infinities, signed zeros, subnormals, ties and overflow,
  // at lengths with vector tails, split over 1 and 2 threads.
  std::vector<uint32_t> bits = {0x7fc00000u, 0xffc00001u, 0x7f800001u, 0xff812345u, 0x7fbfffffu, 0x7f800000u,
                                0xff800000u, 0x00000000u, 0x80000000u, 0x00000001u, 0x807fffffu, 0x33800000u,
                                0x33000001u, 0x477ff000u, 0x477fefffu, 0xc77ff000u, 0x3f801000u, 0x3f803000u,
                                0x3f808000u, 0x3f818000u, 0x7f7fffffu, 0x387fc000u, 0x38800000u};
  for (const DType h : {DType::Float16, DType::BFloat16})
    for (const int threads : {1, 2})
      for (const int64_t n : {int64_t{23}, int64_t{16 * 3 + 7}, int64_t{70001}}) {
        INFO(h << ", " << threads << " threads, " << n << " elements");
        Threads scope(threads);
        std::vector<float> v = random::normal({n}, {.seed = 9}).to_vector<float>();
        for (size_t i = 0; i < v.size(); ++i)
          if (i % 3 == 0) v[i] = std::bit_cast<float>(bits[(i / 3) % bits.size()]);
        const Tensor x = Tensor::from_vector(v, {n});
        auto body = [h](const Tensor& t) { return ops::cast(ops::cast(t, h), DType::Float32); };
        auto jit = ember::function(body, {.jit_compile = true});
        jit(x);
        CHECK(same_bits(jit(x), body(x)));
        CHECK(graph_of(jit).count(graph::NodeKind::Fused) == 1);
      }
}

TEST_CASE("the rounding is what makes a float32 product a half one", "[function][mixed_precision]") {
  // Skipping the rounding pass would hand the readers float32 products: the same operands give other values.
  for (const DType h : {DType::Float16, DType::BFloat16}) {
    INFO(h);
    const Tensor a = ops::cast(random::normal({16, 24}, {.seed = 5}), h);
    const Tensor b = ops::cast(random::normal({24, 8}, {.seed = 6}), h);
    const Tensor half_product = ops::cast(ops::matmul(a, b), DType::Float32);
    const Tensor float_product = ops::matmul(ops::cast(a, DType::Float32), ops::cast(b, DType::Float32));
    CHECK_FALSE(same_bits(half_product, float_product));
    CHECK(same_bits(half_product, ops::cast(ops::cast(float_product, h), DType::Float32)));
  }
}

TEST_CASE("the pass leaves float32 and half products off the CPU's widening kernels alone", "[function]") {
  auto body = [](const Tensor& a, const Tensor& b) { return ops::matmul(a, b); };
  auto traced = ember::function(body);
  const Tensor a = random::normal({4, 5}, {.seed = 1}), b = random::normal({5, 3}, {.seed = 2});
  CHECK(same_bits(traced(a, b), body(a, b)));
  CHECK(graph_of(traced).nodes.size() == 1);
  CHECK(graph_of(traced).count(graph::NodeKind::Fused) == 0);
}

namespace {

std::unique_ptr<Sequential> mlp() {
  random::set_seed(7);
  auto m = std::make_unique<Sequential>();
  m->add(layers::Input({12}));
  m->add(layers::Dense(32, {.activation = "relu"}));
  m->add(layers::Dense(16, {.activation = "relu"}));
  m->add(layers::Dense(4, {.dtype = "float32"}));
  return m;
}

std::unique_ptr<Sequential> cnn() {
  random::set_seed(8);
  auto m = std::make_unique<Sequential>();
  m->add(layers::Input({8, 8, 1}));
  m->add(layers::Conv2D(4, 3, {.activation = "relu"}));
  m->add(layers::MaxPooling2D(2));
  m->add(layers::Flatten());
  m->add(layers::Dense(16, {.activation = "relu"}));
  m->add(layers::Dense(4, {.dtype = "float32"}));
  return m;
}

}  // namespace

TEST_CASE("mixed-precision fit in float32 storage gives eager training's History and weights, bit for bit",
          "[function][fit][mixed_precision]") {
  for (const std::string policy : {"mixed_float16", "mixed_bfloat16"})
    for (auto make : {&mlp, &cnn}) {
      const bool is_mlp = make == &mlp;
      INFO(policy << (is_mlp ? " mlp" : " cnn"));
      std::vector<int64_t> dims{50};
      if (is_mlp) dims.push_back(12);
      else dims.insert(dims.end(), {8, 8, 1});
      const Tensor x = random::uniform(Shape(dims), {.seed = 3});
      std::vector<int32_t> labels(50);
      for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int32_t>((i * 7) % 4);
      const Tensor y = Tensor::from_vector<int32_t>(labels);
      auto train = [&](bool run_eagerly) {
        PolicyScope scope(policy);
        auto m = make();
        m->compile({.optimizer = optimizers::Adam({.learning_rate = 1e-2}),
                    .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                    .metrics = {"accuracy"},
                    .run_eagerly = run_eagerly});
        random::set_seed(99);
        History hist = m->fit(x, y, {.batch_size = 16, .epochs = 3, .verbose = 0});
        return std::make_pair(hist.history, m->get_weights());
      };
      auto [he, we] = train(true);
      auto [ht, wt] = train(false);
      CHECK(ht == he);
      REQUIRE(we.size() == wt.size());
      for (size_t i = 0; i < we.size(); ++i) CHECK(same_bits(wt[i], we[i]));
    }
}

TEST_CASE("a compiled mixed-precision train step keeps no half product", "[function][mixed_precision]") {
  for (const std::string policy : {"mixed_float16", "mixed_bfloat16"}) {
    INFO(policy);
    PolicyScope scope(policy);
    if (!ops::cpu_matmul_widens_half(mixed_precision::global_policy().compute_dtype())) continue;
    auto model = mlp();
    optimizers::Adam opt;
    losses::SparseCategoricalCrossentropy loss_fn({.from_logits = true});
    auto step = ember::function([&](const Tensor& x, const Tensor& y) {
      std::vector<Variable> vars = model->trainable_weights();
      GradientTape tape;
      Tensor loss = loss_fn(y, (*model)(x, /*training=*/true));
      opt.apply(tape.gradient(loss, vars), vars);
      return loss;
    });
    const Tensor x = random::normal({32, 12}, {.seed = 5});
    const Tensor y = ops::cast(random::uniform({32}, {.maxval = 4, .seed = 6}), DType::Int32);
    step(x, y);
    const graph::Graph& g = graph_of(step);
    std::ostringstream printed;
    printed << g;
    INFO(printed.str());
    const auto [f32, half] = matmuls(g);
    CHECK(half == 0);
    CHECK(f32 >= 6);  // the two half layers' forward products and both gradients of each
    // The weights the step updates are rounded in one pass, not cast to half, then widened back (which is what a
    // weight the graph leaves unchanged gets: its cast is cached across calls).
    auto producer = [&](int v) -> const graph::Node* {
      const int p = v < 0 ? -1 : g.values[static_cast<size_t>(v)].producer;
      return p < 0 ? nullptr : &g.nodes[static_cast<size_t>(p)];
    };
    auto is_cast_to = [&](const graph::Node* n, DType to) {
      return n && n->kind == graph::NodeKind::Op && n->op == OpId::cast &&
             g.values[static_cast<size_t>(n->outputs[0])].dtype == to;
    };
    size_t weights_widened = 0;
    for (const graph::Node& n : g.nodes) {
      if (!is_cast_to(&n, DType::Float32)) continue;
      const graph::Node* narrowing = producer(n.inputs[0]);
      if (!is_cast_to(narrowing, mixed_precision::global_policy().compute_dtype())) continue;
      const graph::Node* read = producer(narrowing->inputs[0]);
      weights_widened += read && read->kind == graph::NodeKind::ReadVariable;
    }
    CHECK(weights_widened == 0);
  }
}
