// The graph compiler's constant folding and common-subexpression elimination: what each removes from a traced
// function's graph, that replay keeps eager's bits, and what neither may touch (random ops, a variable read
// across an assignment or a host call, a constant a tape may watch, outputs the caller receives).
#include <catch2/catch.hpp>

#include <cstring>
#include <limits>
#include <sstream>

#include "framework/ember.h"
#include "tests/support/graph_builder.h"
#include "tests/support/tensor_testing.h"
#include "framework/graph/executor.h"
#include "framework/graph/passes.h"
#include "framework/ops/half_products.h"

using namespace ember;
using ember::testing::same_bits;

namespace {

Tensor sample(const Shape& s, uint64_t seed) { return random::normal(s, {.seed = seed}); }

const graph::Graph& graph_of(auto& f) { return f.concrete_functions().at(0)->graph(); }

using Builder = ember::testing::GraphBuilder;

// Trains two models made by `make` on (x, y) for `steps` Adam steps with a hand-written GradientTape step, one
// eagerly and one through ember::function, checking each step's loss and then every weight bit for bit; then
// hands `inspect` the traced step's graph.
template <class Make, class Inspect>
void check_traced_step_keeps_eager_bits(Make make, const Tensor& x, const Tensor& y, int steps, Inspect inspect) {
  std::unique_ptr<Sequential> eager_model = make(), traced_model = make();
  optimizers::Adam eager_opt, traced_opt;
  losses::SparseCategoricalCrossentropy loss_fn({.from_logits = true});
  auto step_of = [&](Sequential& model, optimizers::Optimizer& opt) {
    return [&](const Tensor& xs, const Tensor& ys) {
      std::vector<Variable> vars = model.trainable_weights();
      GradientTape tape;
      Tensor loss = loss_fn(ys, model(xs, /*training=*/true));
      opt.apply(tape.gradient(loss, vars), vars);
      return loss;
    };
  };
  auto eager_step = step_of(*eager_model, eager_opt);
  auto traced_step = ember::function(step_of(*traced_model, traced_opt));
  for (int i = 0; i < steps; ++i) CHECK(same_bits(traced_step(x, y), eager_step(x, y)));
  std::vector<Variable> a = eager_model->weights(), b = traced_model->weights();
  for (size_t i = 0; i < a.size(); ++i) CHECK(same_bits(a[i].value(), b[i].value()));
  inspect(graph_of(traced_step));
}

}  // namespace

TEST_CASE("common subexpressions are computed once, with eager's bits", "[function][passes]") {
  const auto step = [](const Tensor& x) {
    Tensor a = ops::tanh(ops::exp(x) * 2.0f);
    Tensor b = ops::tanh(ops::exp(x) * 2.0f);  // the same chain again, with a 2.0f of its own
    return a + b * ops::sigmoid(x);
  };
  auto f = ember::function(step);
  Tensor x = sample({4, 5}, 1);
  const Tensor expected = step(x);
  CHECK(same_bits(f(x), expected));
  CHECK(same_bits(f(x), expected));  // replayed
  const graph::Graph& g = graph_of(f);
  CHECK(g.count(OpId::exp) == 1);
  CHECK(g.count(OpId::mul) == 2);  // the two `* 2.0f` are one; `b * sigmoid(x)`
  CHECK(g.count(OpId::tanh) == 1);
}

TEST_CASE("common-subexpression elimination merges gradients' repeated work, keeping eager's bits",
          "[function][passes]") {
  Variable w(sample({5, 3}, 2), {.name = "w"});
  const auto step = [&w](const Tensor& x) {
    GradientTape tape;
    Tensor y = ops::matmul(x, w.read_value());
    Tensor loss = ops::reduce_sum(ops::square(ops::tanh(y))) + ops::reduce_sum(ops::tanh(y));
    return tape.gradient(loss, {w})[0];
  };
  auto f = ember::function(step);
  Tensor x = sample({4, 5}, 3);
  const Tensor expected = step(x);
  CHECK(same_bits(f(x), expected));
  CHECK(same_bits(f(x), expected));
  CHECK(graph_of(f).count(OpId::tanh) == 1);
}

TEST_CASE("outputs the caller receives stay tensors of their own", "[function][passes]") {
  auto f = ember::function([](const Tensor& x) { return std::tuple<Tensor, Tensor>{ops::exp(x), ops::exp(x)}; });
  Tensor x = sample({3}, 4);
  f(x);
  auto [a, b] = f(x);
  CHECK(a.id() != b.id());
  CHECK(same_bits(a, ops::exp(x)));
  CHECK(graph_of(f).count(OpId::exp) == 2);
}

TEST_CASE("random ops are never merged", "[function][passes]") {
  auto f = ember::function([](const Tensor& x) { return x + random::normal({3}) - random::normal({3}); });
  Tensor x = ops::zeros({3});
  f(x);
  Tensor y = f(x);
  CHECK(graph_of(f).count(OpId::random_normal) == 2);
  CHECK(ops::reduce_max(ops::abs(y)).item<float>() > 0.0f);

  // Two random ops with the same attributes, written by hand: still two draws.
  Builder b;
  const Shape s{4};
  RandomAttrs attrs{.shape = s, .key = 1, .counter = 2};
  graph::Node r;
  r.op = OpId::random_normal;
  r.specs = {OutputSpec{s, DType::Float32}};
  r.attrs = attrs;
  const int r1 = b.node(r, s), r2 = b.node(r, s);
  b.g.outputs = {b.op(OpId::sub, {r1, r2}, s)};
  graph::optimize(b.g);
  CHECK(b.g.count(OpId::random_normal) == 2);
  const graph::Node& sub = b.g.nodes.back();
  REQUIRE(sub.op == OpId::sub);
  CHECK(sub.inputs[0] != sub.inputs[1]);  // each draw is read
}

TEST_CASE("an op writing into an input separates what read it before from what reads it after", "[passes]") {
  Builder b;
  const Shape s{3};
  const int x = b.input(s);
  const int before = b.op(OpId::exp, {x}, s);
  graph::Node neg;  // negates x's buffer in place, as an optimizer's fused update writes its variable
  neg.op = OpId::neg;
  neg.inputs = {x};
  neg.specs = {OutputSpec{s, DType::Float32, 0}};
  const int negated = b.node(std::move(neg), s);
  const int after = b.op(OpId::exp, {x}, s);
  b.g.outputs = {b.op(OpId::sub, {before, after}, s), negated};  // returned, so that the write stays
  graph::optimize(b.g);
  CHECK(b.g.count(OpId::exp) == 2);
  graph::Executable exe(std::move(b.g));
  const Tensor in = Tensor::from_vector<float>({1, 2, 3});
  const Tensor expected = ops::exp(in) - ops::exp(-in);
  CHECK(same_bits(exe.run(std::span<const Tensor>(&in, 1))[0], expected));
}

TEST_CASE("variable reads merge, but not across an assignment or a host call", "[passes]") {
  Variable v(Tensor::from_vector<float>({1, 2, 3}), {.name = "v"});
  const Shape s{3};
  SECTION("nothing between: one read") {
    Builder b;
    const int x = b.input(s);
    const int r1 = b.read(v), r2 = b.read(v);
    b.g.outputs = {b.op(OpId::mul, {b.op(OpId::add, {r1, x}, s), r2}, s)};
    graph::optimize(b.g);
    CHECK(b.g.count(graph::NodeKind::ReadVariable) == 1);
  }
  SECTION("an assignment between: two reads, and the second sees the new value") {
    Builder b;
    const int x = b.input(s);
    const int r1 = b.read(v);
    b.assign(v, x);
    const int r2 = b.read(v);
    b.g.outputs = {b.op(OpId::sub, {r1, r2}, s)};
    graph::optimize(b.g);
    CHECK(b.g.count(graph::NodeKind::ReadVariable) == 2);
    graph::Executable exe(std::move(b.g));
    const Tensor in = Tensor::from_vector<float>({10, 20, 30});
    CHECK(exe.run(std::span<const Tensor>(&in, 1))[0].to_vector<float>() == std::vector<float>{-9, -18, -27});
  }
  SECTION("a host call between: two reads") {
    Builder b;
    const int r1 = b.read(v);
    graph::Node h;
    h.kind = graph::NodeKind::HostCall;
    h.name = "assigns v";
    h.host = [v](std::span<const Tensor>) mutable {
      v.assign(Tensor::from_vector<float>({0, 0, 0}));
      return std::vector<Tensor>{};
    };
    b.g.nodes.push_back(std::move(h));
    const int r2 = b.read(v);
    b.g.outputs = {b.op(OpId::sub, {r1, r2}, s)};
    graph::optimize(b.g);
    CHECK(b.g.count(graph::NodeKind::ReadVariable) == 2);
  }
}

TEST_CASE("a traced read, assignment and read of a variable keep eager's values", "[function][passes]") {
  Variable v(Tensor::from_vector<float>({1, 2, 3}), {.name = "v"});
  const auto step = [&v](const Tensor& x) {
    Tensor a = ops::exp(v.read_value());
    v.assign(x);
    Tensor b = ops::exp(v.read_value());
    return a - b;
  };
  auto f = ember::function(step);
  const Tensor x = Tensor::from_vector<float>({0.5f, 0.25f, 0.125f});
  f(x);
  v.assign(Tensor::from_vector<float>({1, 2, 3}));
  const Tensor replayed = f(x);
  v.assign(Tensor::from_vector<float>({1, 2, 3}));
  CHECK(same_bits(replayed, step(x)));
  CHECK(graph_of(f).count(OpId::exp) == 2);
}

TEST_CASE("chains of constants are folded, with eager's bits", "[function][passes]") {
  const auto step = [](const Tensor& x) {
    Tensor scale = ops::exp(Tensor::scalar(0.5f)) * 2.0f + 1.0f;      // exp, mul, add of constants
    Tensor bias = ops::reshape(ops::ones({6}) * 3.0f, {2, 3});       // fill, mul, reshape of constants
    return x * scale + bias;
  };
  auto f = ember::function(step);
  Tensor x = sample({2, 3}, 5);
  const Tensor expected = step(x);
  CHECK(same_bits(f(x), expected));
  CHECK(same_bits(f(x), expected));
  const graph::Graph& g = graph_of(f);
  CHECK(g.count(OpId::exp) == 0);
  CHECK(g.count(OpId::fill) == 0);
  CHECK(g.count(OpId::reshape) == 0);
  CHECK(g.count(OpId::mul) == 1);  // x * scale
  CHECK(g.count(OpId::add) == 1);  // + bias
  CHECK(g.nodes.size() == 2);
}

TEST_CASE("constant folding leaves random ops, large outputs, returned outputs and watched constants",
          "[function][passes]") {
  SECTION("a random op") {
    auto f = ember::function([](const Tensor& x) { return x + random::uniform({3}); });
    f(ops::zeros({3}));
    CHECK(graph_of(f).count(OpId::random_uniform) == 1);
  }
  SECTION("an output over 1 MiB") {
    auto f = ember::function([](const Tensor& x) { return x + ops::ones({600, 600}); });
    f(Tensor::scalar(1.0f));
    CHECK(graph_of(f).count(OpId::fill) == 1);
  }
  SECTION("an output the function returns") {
    auto f = ember::function([](const Tensor& x) { return std::tuple<Tensor, Tensor>{x + 1.0f, ops::ones({3}) * 2.0f}; });
    const Tensor x = ops::zeros({3});
    f(x);
    auto [p, q] = f(x);
    auto [r, s] = f(x);
    CHECK(graph_of(f).count(OpId::mul) == 1);
    CHECK(q.id() != s.id());
  }
  SECTION("a captured tensor: a tape may watch it") {
    const Tensor c = Tensor::from_vector<float>({0.5f, -1.0f, 2.0f});
    auto f = ember::function([&c](const Tensor& x) { return x * ops::exp(c); });
    const Tensor x = Tensor::from_vector<float>({1, 2, 3});
    f(x);
    CHECK(graph_of(f).count(OpId::exp) == 1);
    const auto grad_of = [&c, &x](auto&& fn) {
      GradientTape tape;
      tape.watch(c);
      Tensor y = ops::reduce_sum(fn(x));
      return tape.gradient(y, c);
    };
    CHECK(same_bits(grad_of(f), grad_of([&c](const Tensor& t) { return t * ops::exp(c); })));
  }
}

TEST_CASE("reductions over size-1 axes become views of their input, with eager's bits", "[function][passes]") {
  const auto step = [](const Tensor& x, const Tensor& z) {
    Tensor h = ops::neg(x);                                 // (1, 5), with a -0
    Tensor s = ops::reduce_sum(h, {0});                     // a view of h, its -0 kept
    Tensor m = ops::reduce_max(ops::tanh(z), {1}, true);    // (3, 1, 4): a view
    Tensor p = ops::reduce_mean(ops::sigmoid(z), {0, 1});  // (4,): averages 3 values, a kernel
    // tanh may not write into s: it is h's buffer, which h + 1 reads afterwards.
    return std::vector<Tensor>{ops::tanh(s), h + 1.0f, ops::reduce_min(m, {2}), p, ops::reduce_prod(s * 2.0f)};
  };
  auto f = ember::function(step);
  Tensor x = Tensor::from_vector<float>({0.5f, -1.0f, 0.0f, 2.0f, 3.0f}, {1, 5}), z = sample({3, 1, 4}, 5);
  const std::vector<Tensor> expected = step(x, z);
  for (int call = 0; call < 2; ++call) {  // traced, then replayed
    const std::vector<Tensor> got = f(x, z);
    REQUIRE(got.size() == expected.size());
    for (size_t i = 0; i < got.size(); ++i) CHECK(same_bits(got[i], expected[i]));
  }
  const graph::Graph& g = graph_of(f);
  CHECK(g.count(OpId::reduce_sum) == 0);
  CHECK(g.count(OpId::reduce_max) == 0);
  CHECK(g.count(OpId::reduce_mean) == 1);  // over 3 elements
  CHECK(g.count(OpId::reduce_min) == 1);   // over 4 elements
  CHECK(g.count(OpId::reduce_prod) == 1);  // over 5 elements
}

TEST_CASE("a cast back to a half type after an exact widening reads the first cast, with eager's bits",
          "[function][passes]") {
  // What a mixed-precision model does to its input: to the compute dtype, back to float32, to the compute dtype.
  // Values that round (ties too), overflow, NaNs (one with a payload) and infinities.
  std::vector<float> xs = {1.0f, 1.00390625f, 1.01171875f, -3.14159f, 65504.0f, 70000.0f, 3.0e38f, -0.0f, 1e-30f,
                           std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::quiet_NaN()};
  uint32_t payload_nan = 0x7fa12345u;  // a signalling NaN with a payload
  float p;
  std::memcpy(&p, &payload_nan, sizeof p);
  xs.push_back(p);
  const Tensor x = Tensor::from_vector<float>(xs, {static_cast<int64_t>(xs.size())});
  for (DType half : {DType::BFloat16, DType::Float16}) {
    INFO("dtype " << half);
    const auto step = [half](const Tensor& in) {
      Tensor once = ops::cast(in, half);
      Tensor again = ops::cast(ops::cast(once, DType::Float32), half);
      Tensor via_f64 = ops::cast(ops::cast(once, DType::Float64), half);
      Tensor not_exact = ops::cast(ops::cast(once, half == DType::BFloat16 ? DType::Float16 : DType::BFloat16), half);
      return std::vector<Tensor>{again * 2.0f, via_f64 + 1.0f, not_exact - 1.0f};
    };
    auto f = ember::function(step);
    const std::vector<Tensor> expected = step(x);
    for (int call = 0; call < 2; ++call) {
      const std::vector<Tensor> got = f(x);
      REQUIRE(got.size() == expected.size());
      for (size_t i = 0; i < got.size(); ++i) CHECK(same_bits(got[i], expected[i]));
    }
    // Left: the first cast, and the round trip through the other half type (neither holds all of the other's
    // values), which is no exact widening.
    CHECK(graph_of(f).count(OpId::cast) == 3);
  }
  // A returned round trip stays a tensor of its own; a cast of a value no cast made is left as it is.
  auto returned = ember::function([](const Tensor& in) {
    Tensor once = ops::cast(in, DType::BFloat16);
    return std::vector<Tensor>{once, ops::cast(ops::cast(once, DType::Float32), DType::BFloat16)};
  });
  returned(x);
  CHECK(graph_of(returned).count(OpId::cast) == 3);
  auto uncast = ember::function(
      [](const Tensor& in) { return ops::cast(ops::cast(in, DType::Float32), DType::BFloat16) * 2.0f; });
  uncast(ops::cast(x, DType::BFloat16));
  CHECK(graph_of(uncast).count(OpId::cast) == 2);
}

TEST_CASE("Adam's update reads half gradients without their cast to float32, with eager's bits", "[function][passes]") {
  // A mixed-precision step: each float32 weight's gradient is a half value cast to float32. On the CPU, where the
  // update is one op, it widens a half gradient itself, so the cast goes, unless the half products compute as
  // float32's (float16 always; bfloat16 where its native kernels do not pay), where store_half_in_float32 keeps
  // them in float32 buffers and drops the cast itself.
  for (const char* policy : {"mixed_bfloat16", "mixed_float16"}) {
    INFO("policy " << policy);
    mixed_precision::set_global_policy(policy);
    auto make = [] {
      random::set_seed(6);
      auto model = std::make_unique<Sequential>();
      model->add(layers::Input({12}));
      model->add(layers::Dense(2500, {.activation = "relu"}));  // 30,000 weights: several blocks of the widening
      model->add(layers::Dense(3, {.dtype = "float32"}));
      return model;
    };
    const DType half = std::string(policy) == "mixed_bfloat16" ? DType::BFloat16 : DType::Float16;
    Tensor x = random::normal({16, 12}, {.seed = 7});
    Tensor y = Tensor::from_vector<int32_t>({0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0});
    check_traced_step_keeps_eager_bits(make, x, y, 3, [&](const graph::Graph& g) {
      // The update's gradient inputs: the hidden layer's kernel and bias half-typed where the cast was folded.
      int half_gradients = 0;
      for (const graph::Node& n : g.nodes)
        if (n.kind == graph::NodeKind::UpdateVariables)
          for (int v : n.inputs)
            if (v >= 0 && is_floating(g.values[static_cast<size_t>(v)].dtype) &&
                dtype_size(g.values[static_cast<size_t>(v)].dtype) == 2)
              ++half_gradients;
      CHECK(half_gradients == (ops::cpu_matmul_widens_half(half) ? 0 : 2));
    });
    mixed_precision::set_global_policy("float32");
  }
}

TEST_CASE("a tanh or sigmoid after Dense or Conv2D moves into the op's bias pass, with eager's bits",
          "[function][passes]") {
  auto make = [] {
    random::set_seed(4);
    auto model = std::make_unique<Sequential>();
    model->add(layers::Input({8, 8, 1}));
    model->add(layers::Conv2D(4, 3, {.activation = "sigmoid"}));
    model->add(layers::Flatten());
    model->add(layers::Dense(16, {.activation = "tanh"}));
    model->add(layers::Dense(3));
    return model;
  };
  Tensor x = random::uniform({16, 8, 8, 1}, {.seed = 5});
  Tensor y = Tensor::from_vector<int32_t>({0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0});
  check_traced_step_keeps_eager_bits(make, x, y, 4, [](const graph::Graph& g) {
    CHECK(g.count(OpId::tanh) == 0);
    CHECK(g.count(OpId::sigmoid) == 0);
    std::ostringstream printed;
    printed << g;
    CHECK_THAT(printed.str(), Catch::Contains("matmul_bias[tanh]") && Catch::Contains("conv2d_bias[sigmoid]"));
  });
}

TEST_CASE("a fused activation keeps its gradient under a tape, and stays apart where its input is read elsewhere",
          "[function][passes]") {
  const Tensor x = sample({6, 5}, 11), w = sample({5, 7}, 12), bias = sample({7}, 13);
  const auto body = [](const Tensor& x, const Tensor& w, const Tensor& bias) {
    return ops::reduce_sum(ops::sigmoid(ops::matmul_bias(x, w, bias)) * 3.0f);
  };
  auto f = ember::function(body);
  f(x, w, bias);  // traced
  GradientTape tape;
  tape.watch(w);
  tape.watch(bias);
  const std::vector<Tensor> grads = tape.gradient(f(x, w, bias), std::vector<Tensor>{w, bias});
  GradientTape eager_tape;
  eager_tape.watch(w);
  eager_tape.watch(bias);
  const std::vector<Tensor> expected = eager_tape.gradient(body(x, w, bias), std::vector<Tensor>{w, bias});
  CHECK(same_bits(grads[0], expected[0]));
  CHECK(same_bits(grads[1], expected[1]));
  CHECK(graph_of(f).count(OpId::sigmoid) == 0);

  // z is returned as well: the tanh stays an op of its own.
  const auto both = [](const Tensor& x, const Tensor& w, const Tensor& bias) {
    Tensor z = ops::matmul_bias(x, w, bias);
    return std::make_tuple(z, ops::tanh(z));
  };
  auto g = ember::function(both);
  auto [z, t] = g(x, w, bias);
  auto [ez, et] = both(x, w, bias);
  CHECK(same_bits(z, ez));
  CHECK(same_bits(t, et));
  CHECK(graph_of(g).count(OpId::tanh) == 1);
}
