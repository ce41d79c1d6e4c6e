// jit_compile: chains of elementwise ops fused into one pass (fuse_elementwise), with the unfused ops' bits.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <sstream>

#include "framework/ember.h"
#include "framework/ops/fused_elementwise.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using ember::testing::same_bits;

namespace {

Tensor sample(const Shape& s, uint64_t seed) { return random::normal(s, {.seed = seed}); }

// Values that tell functors apart at their edges: signed zeros, infinities, NaN, tiny and large magnitudes, and
// enough ordinary ones for several blocks of the fused kernel.
Tensor edge_values(int64_t rows, int64_t cols, uint64_t seed) {
  std::vector<float> v = sample({rows, cols}, seed).to_vector<float>();
  const float special[] = {0.0f, -0.0f, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                           std::numeric_limits<float>::quiet_NaN(), 1e-30f, -1e-30f, 88.0f, -88.0f, 6.0f, 3.5f, -2.5f};
  for (size_t i = 0; i < std::size(special) && i < v.size(); ++i) v[i * 7 % v.size()] = special[i];
  return Tensor::from_vector(v, {rows, cols});
}

int64_t rows_of(const Tensor& x) { return x.shape()[0]; }

size_t fused_nodes(const auto& f) { return f.concrete_functions().at(0)->graph().count(graph::NodeKind::Fused); }

}  // namespace

TEST_CASE("jit_compile fuses an elementwise chain into one node, with the unfused ops' bits", "[function][jit]") {
  auto body = [](const Tensor& x, const Tensor& bias, const Tensor& column) {
    Tensor y = ops::relu(x * 2.0f + bias);                      // a scalar and a bias over the rows
    Tensor z = ops::sigmoid(y) * column - 0.25f;                  // a column over the columns
    Tensor mask = ops::cast(ops::greater(z, Tensor::scalar(0.1f)), DType::Float32);
    Tensor w = ops::where(ops::less(x, Tensor::scalar(0.0f)), z * mask, ops::tanh(y));
    return std::make_tuple(ops::clip_by_value(w, Tensor::scalar(-0.2f), Tensor::scalar(0.7f)), y);
  };
  auto plain = ember::function(body);
  auto jit = ember::function(body, {.jit_compile = true});
  // Sizes over several blocks and chunks, and odd ones.
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{3, 5}, {257, 33}, {1000, 130}}) {
    INFO(rows << " x " << cols);
    Tensor x = edge_values(rows, cols, 1), bias = sample({cols}, 2), column = sample({rows, 1}, 3);
    auto [e0, e1] = body(x, bias, column);
    plain(x, bias, column);  // the first call traces, running the ops one by one; the second replays the graph
    jit(x, bias, column);
    auto [p0, p1] = plain(x, bias, column);
    auto [j0, j1] = jit(x, bias, column);
    CHECK(same_bits(j0, e0));
    CHECK(same_bits(j1, e1));
    CHECK(same_bits(p0, e0));
  }
  // One fused node makes both outputs; no elementwise op is left beside it.
  const graph::Graph& g = jit.concrete_functions().at(0)->graph();
  std::ostringstream printed;
  printed << g;
  INFO(printed.str());
  CHECK(g.count(graph::NodeKind::Fused) == 1);
  CHECK(g.nodes.size() == 1);
  CHECK(printed.str().find("fused[mul, add, relu, sigmoid") != std::string::npos);
  CHECK(fused_nodes(plain) == 0);
}

TEST_CASE("every fusible op gives its own kernel's bits when fused", "[function][jit]") {
  using Unary = std::function<Tensor(const Tensor&)>;
  const std::vector<std::pair<std::string, Unary>> unary = {
      {"neg", ops::neg}, {"abs", ops::abs}, {"sign", ops::sign}, {"exp", ops::exp}, {"log", ops::log},
      {"log1p", ops::log1p}, {"sqrt", ops::sqrt}, {"rsqrt", ops::rsqrt}, {"square", ops::square},
      {"reciprocal", ops::reciprocal}, {"sin", ops::sin}, {"cos", ops::cos}, {"tanh", ops::tanh},
      {"sigmoid", ops::sigmoid}, {"relu", ops::relu}, {"relu6", ops::relu6}, {"elu", ops::elu}, {"selu", ops::selu},
      {"gelu", [](const Tensor& x) { return ops::gelu(x); }},
      {"gelu approximate", [](const Tensor& x) { return ops::gelu(x, true); }},
      {"softplus", ops::softplus}, {"softsign", ops::softsign}, {"swish", ops::swish}, {"floor", ops::floor},
      {"ceil", ops::ceil}, {"round", ops::round},
      {"is_finite", [](const Tensor& x) { return ops::cast(ops::is_finite(x), DType::Float32); }},
      {"logical_not", [](const Tensor& x) { return ops::cast(ops::logical_not(ops::greater(x, Tensor::scalar(0.0f))), DType::Float32); }},
  };
  using Binary = std::function<Tensor(const Tensor&, const Tensor&)>;
  const std::vector<std::pair<std::string, Binary>> binary = {
      {"add", ops::add}, {"sub", ops::sub}, {"mul", ops::mul}, {"div", ops::div}, {"div_no_nan", ops::div_no_nan},
      {"pow", ops::pow}, {"maximum", ops::maximum}, {"minimum", ops::minimum},
      {"squared_difference", ops::squared_difference}, {"relu_grad", ops::relu_grad},
      {"equal", [](const Tensor& a, const Tensor& b) { return ops::cast(ops::equal(a, b), DType::Float32); }},
      {"not_equal", [](const Tensor& a, const Tensor& b) { return ops::cast(ops::not_equal(a, b), DType::Float32); }},
      {"less", [](const Tensor& a, const Tensor& b) { return ops::cast(ops::less(a, b), DType::Float32); }},
      {"less_equal", [](const Tensor& a, const Tensor& b) { return ops::cast(ops::less_equal(a, b), DType::Float32); }},
      {"greater", [](const Tensor& a, const Tensor& b) { return ops::cast(ops::greater(a, b), DType::Float32); }},
      {"greater_equal",
       [](const Tensor& a, const Tensor& b) { return ops::cast(ops::greater_equal(a, b), DType::Float32); }},
      {"logical_and",
       [](const Tensor& a, const Tensor& b) {
         return ops::cast(ops::logical_and(ops::greater(a, b), ops::less(a, Tensor::scalar(1.0f))), DType::Float32);
       }},
      {"logical_or",
       [](const Tensor& a, const Tensor& b) {
         return ops::cast(ops::logical_or(ops::greater(a, b), ops::less(a, Tensor::scalar(-1.0f))), DType::Float32);
       }},
  };
  Tensor x = edge_values(40, 37, 11), y = edge_values(40, 37, 12);
  for (const auto& [name, op] : unary) {
    INFO(name);
    // Two ops at least make a chain: the op, then a step after it.
    auto body = [&op](const Tensor& a) { return op(a * 1.5f) + 0.5f; };
    auto jit = ember::function(body, {.jit_compile = true});
    jit(x);  // traces
    CHECK(same_bits(jit(x), body(x)));
    CHECK(fused_nodes(jit) == 1);
  }
  for (const auto& [name, op] : binary) {
    INFO(name);
    auto body = [&op](const Tensor& a, const Tensor& b) { return op(a - 0.5f, b) * 3.0f; };
    auto jit = ember::function(body, {.jit_compile = true});
    jit(x, y);  // traces
    CHECK(same_bits(jit(x, y), body(x, y)));
    CHECK(fused_nodes(jit) == 1);
  }
}

TEST_CASE("a chain's value read outside it is an output; effects and other shapes split chains", "[function][jit]") {
  Variable v(ops::zeros({6, 4}), {.name = "v"});
  auto body = [&v](const Tensor& x) {
    Tensor a = ops::exp(x) * 2.0f;
    Tensor s = ops::reduce_sum(a, {1}, true);  // reads a, between the chain's ops
    Tensor b = ops::tanh(a) + 1.0f;
    v.assign(b);                                  // an effect: nothing moves past it
    Tensor c = ops::square(b) - ops::sigmoid(x);
    return std::make_tuple(c / s, a);
  };
  auto jit = ember::function(body, {.jit_compile = true});
  Tensor x = sample({6, 4}, 21);
  Variable eager_v(ops::zeros({6, 4}), {.name = "v"});
  std::swap(v, eager_v);
  auto [e0, e1] = body(x);
  std::swap(v, eager_v);
  jit(x);  // traces
  auto [j0, j1] = jit(x);
  CHECK(same_bits(j0, e0));
  CHECK(same_bits(j1, e1));
  CHECK(same_bits(v.value(), eager_v.value()));
  const graph::Graph& g = jit.concrete_functions().at(0)->graph();
  std::ostringstream printed;
  printed << g;
  INFO(printed.str());
  // exp-mul (a is read by reduce_sum, then by tanh: an output), tanh-add (b assigned), square-sigmoid-sub-div.
  CHECK(g.count(graph::NodeKind::Fused) == 3);
  CHECK(g.count(OpId::reduce_sum) == 1);
}

TEST_CASE("under a tape a fused node runs op by op, so gradients flow", "[function][jit]") {
  auto body = [](const Tensor& x) { return ops::reduce_sum(ops::tanh(x * 3.0f) * ops::sigmoid(x)); };
  auto jit = ember::function(body, {.jit_compile = true});
  Tensor x = sample({5, 9}, 31);
  jit(x);  // traced
  GradientTape tape;
  tape.watch(x);
  Tensor y = jit(x);
  Tensor g = tape.gradient(y, x);
  GradientTape eager_tape;
  eager_tape.watch(x);
  Tensor eager_g = eager_tape.gradient(body(x), x);
  CHECK(same_bits(g, eager_g));
  CHECK(fused_nodes(jit) == 1);
}

TEST_CASE("jit_compile runs a chain reading a matmul_bias or conv2d_bias in the product's bias pass",
          "[function][jit]") {
  // A Dense with mish (a chain of three ops), one with gelu and a scaling whose product is also returned, and a
  // Conv2D with relu then a chain: each product and its chain one node, with the unfused ops' bits. A single op
  // after a product stays apart.
  auto body = [](const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& images, const Tensor& filters,
                 const Tensor& fb) {
    Tensor y = ops::matmul_bias(x, w, b);
    Tensor mish = y * ops::tanh(ops::softplus(y));
    Tensor z = ops::matmul_bias(x, ops::slice(w, {0, 0}, {40, 64}), ops::slice(b, {0}, {64}));
    Tensor gelu = ops::gelu(z) * 2.0f;
    Tensor conv = ops::conv2d_bias_relu(images, filters, fb, {.padding = "same"}) * 0.5f - 0.125f;
    Tensor alone = ops::softplus(ops::matmul_bias(ops::slice(x, {0, 0}, {rows_of(x), 20}), ops::slice(w, {0, 0}, {20, 7}),
                                                  ops::slice(b, {0}, {7})));
    return std::make_tuple(mish, gelu, z, ops::tanh(conv), alone);
  };
  auto plain = ember::function(body);
  auto jit = ember::function(body, {.jit_compile = true});
  for (int64_t rows : {3, 257, 1000}) {
    INFO(rows << " rows");
    const Tensor x = edge_values(rows, 40, 1), w = sample({40, 130}, 2), b = sample({130}, 3);
    const Tensor images = sample({rows / 50 + 1, 9, 7, 3}, 4), filters = sample({3, 3, 3, 5}, 5), fb = sample({5}, 6);
    auto [e0, e1, e2, e3, e4] = body(x, w, b, images, filters, fb);
    plain(x, w, b, images, filters, fb);
    jit(x, w, b, images, filters, fb);
    auto [j0, j1, j2, j3, j4] = jit(x, w, b, images, filters, fb);
    CHECK(same_bits(j0, e0));
    CHECK(same_bits(j1, e1));
    CHECK(same_bits(j2, e2));
    CHECK(same_bits(j3, e3));
    CHECK(same_bits(j4, e4));
  }
  const graph::Graph& g = jit.concrete_functions().at(0)->graph();
  std::ostringstream printed;
  printed << g;
  INFO(printed.str());
  CHECK(g.count(OpId::matmul_bias) == 1);  // the lone softplus's
  CHECK(g.count(OpId::softplus) == 1);
  CHECK(g.count(OpId::conv2d_bias) == 0);
  CHECK(printed.str().find("fused[matmul_bias, softplus, tanh, mul]") != std::string::npos);
  CHECK(printed.str().find("fused[matmul_bias, gelu, mul]") != std::string::npos);
  CHECK(printed.str().find("fused[conv2d_bias[relu], mul, sub, tanh]") != std::string::npos);
  // Each such node makes its product as its first output.
  size_t with_product = 0;
  for (const graph::Node& n : g.nodes)
    if (n.kind == graph::NodeKind::Fused && n.fused->product) {
      ++with_product;
      CHECK(g.values[static_cast<size_t>(n.outputs[0])].shape == n.fused->product->spec.shape);
    }
  CHECK(with_product == 3);
  CHECK(plain.concrete_functions().at(0)->graph().count(OpId::matmul_bias) == 3);
}

TEST_CASE("a product's epilogue chain keeps the unfused bits in float16 and bfloat16, and under a tape",
          "[function][jit][mixed_precision]") {
  auto body = [](const Tensor& x, const Tensor& w, const Tensor& b) {
    return ops::reduce_sum(ops::silu(ops::matmul_bias(x, w, b)) * 3.0f);
  };
  for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16}) {
    INFO(dtype);
    auto jit = ember::function(body, {.jit_compile = true});
    const Tensor x = ops::cast(sample({67, 33}, 11), dtype), w = ops::cast(sample({33, 48}, 12), dtype),
                 b = ops::cast(sample({48}, 13), dtype);
    jit(x, w, b);
    CHECK(same_bits(jit(x, w, b), body(x, w, b)));
    const graph::Graph& g = jit.concrete_functions().at(0)->graph();
    CHECK(g.count(OpId::matmul_bias) == 0);
    // Recorded by a tape, the node runs the product and the chain op by op: the tape differentiates each.
    GradientTape tape;
    tape.watch(x);
    tape.watch(w);
    std::vector<Tensor> grads = tape.gradient(jit(x, w, b), std::vector<Tensor>{x, w});
    GradientTape eager_tape;
    eager_tape.watch(x);
    eager_tape.watch(w);
    std::vector<Tensor> eager_grads = eager_tape.gradient(body(x, w, b), std::vector<Tensor>{x, w});
    CHECK(same_bits(grads[0], eager_grads[0]));
    CHECK(same_bits(grads[1], eager_grads[1]));
  }
}

namespace {
// The model `make` builds, trained 5 steps with Adam by a plain ember::function and by one with jit_compile, from the
// same seeds: the same losses and weights. `check` then looks at the two functions' graphs.
void check_jit_training(const std::function<std::unique_ptr<Sequential>()>& make, const Tensor& x, const Tensor& y,
                        const std::function<void(const graph::Graph& plain, const graph::Graph& jit)>& check) {
  auto plain_model = make(), jit_model = make();
  optimizers::Adam plain_opt, jit_opt;
  losses::SparseCategoricalCrossentropy loss_fn({.from_logits = true});
  auto step_of = [&](Sequential& model, optimizers::Optimizer& opt) {
    return [&](const Tensor& x, const Tensor& y) {
      std::vector<Variable> vars = model.trainable_weights();
      GradientTape tape;
      Tensor loss = loss_fn(y, model(x, /*training=*/true));
      opt.apply(tape.gradient(loss, vars), vars);
      return loss;
    };
  };
  auto plain_step = ember::function(step_of(*plain_model, plain_opt));
  auto jit_step = ember::function(step_of(*jit_model, jit_opt), {.jit_compile = true});
  std::vector<float> plain_losses, jit_losses;
  random::set_seed(6);
  for (int i = 0; i < 5; ++i) plain_losses.push_back(plain_step(x, y).item<float>());
  random::set_seed(6);
  for (int i = 0; i < 5; ++i) jit_losses.push_back(jit_step(x, y).item<float>());
  CHECK(jit_losses == plain_losses);
  std::vector<Variable> a = plain_model->weights(), b = jit_model->weights();
  for (size_t i = 0; i < a.size(); ++i) CHECK(same_bits(a[i].value(), b[i].value()));
  check(plain_step.concrete_functions().at(0)->graph(), jit_step.concrete_functions().at(0)->graph());
}

struct PolicyScope {
  explicit PolicyScope(const std::string& name) { mixed_precision::set_global_policy(name); }
  ~PolicyScope() { mixed_precision::set_global_policy("float32"); }
};
}  // namespace

TEST_CASE("a training step compiled with jit_compile trains with the unfused step's bits", "[function][jit]") {
  auto make = [] {
    random::set_seed(4);
    auto model = std::make_unique<Sequential>();
    model->add(layers::Input({8, 8, 1}));
    model->add(layers::Conv2D(4, 3, {.activation = "relu"}));
    model->add(layers::Flatten());
    model->add(layers::Dropout(0.3));
    model->add(layers::Dense(16, {.activation = "gelu"}));
    model->add(layers::Dense(3));
    return model;
  };
  Tensor x = random::uniform({16, 8, 8, 1}, {.seed = 5});
  Tensor y = Tensor::from_vector<int32_t>({0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0});
  check_jit_training(make, x, y, [](const graph::Graph& plain, const graph::Graph& jit) {
    CHECK(jit.count(graph::NodeKind::Fused) >= 1);  // dropout's mask and scaling, gelu's gradient
    CHECK(jit.nodes.size() < plain.nodes.size());
  });
}

TEST_CASE("a mixed-precision training step compiled with jit_compile has the unfused step's bits",
          "[function][jit][mixed_precision]") {
  for (const std::string policy : {"mixed_float16", "mixed_bfloat16"}) {
    INFO(policy);
    PolicyScope scope(policy);
    auto make = [] {
      random::set_seed(4);
      auto model = std::make_unique<Sequential>();
      model->add(layers::Input({12}));
      model->add(layers::Dense(16, {.activation = "gelu"}));
      model->add(layers::Dropout(0.3));
      model->add(layers::Dense(16, {.activation = "swish"}));
      model->add(layers::Dense(3));
      return model;
    };
    const Tensor x = random::normal({32, 12}, {.seed = 5});
    const Tensor y = ops::cast(random::uniform({32}, {.maxval = 3, .seed = 6}), DType::Int32);
    check_jit_training(make, x, y, [](const graph::Graph& plain, const graph::Graph& jit) {
      // The half chains (dropout's, the activations' and their gradients') fuse with the casts around them.
      std::ostringstream printed;
      printed << jit;
      INFO(printed.str());
      size_t half_steps = 0;
      for (const graph::Node& n : jit.nodes)
        if (n.kind == graph::NodeKind::Fused)
          for (const auto& s : n.fused->steps) half_steps += ops::fused_rounds_to_half(s.dtype) ? 1 : 0;
      CHECK(half_steps >= 4);
      CHECK(jit.count(OpId::cast) < plain.count(OpId::cast));
      CHECK(jit.nodes.size() < plain.nodes.size());
    });
  }
}

TEST_CASE("compile's jit_compile fuses fit's steps, with the same History and weights", "[function][jit][fit]") {
  for (const std::string policy : {"float32", "mixed_float16"}) {
    INFO(policy);
    auto run = [&policy](JitCompile jit) {
      backend::clear_session();
      PolicyScope scope(policy);
      random::set_seed(8);
      Sequential model({layers::Input({10}), layers::Dense(12, {.activation = "swish"}), layers::Dropout(0.2),
                        layers::Dense(2)});
      model.compile({.optimizer = optimizers::Adam(),
                     .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}), .metrics = {"accuracy"},
                     .jit_compile = jit});
      Tensor x = random::uniform({40, 10}, {.seed = 9});
      Tensor y = ops::cast(random::uniform({40}, {.maxval = 2, .seed = 10}), DType::Int32);
      History h = model.fit(x, y, {.batch_size = 8, .epochs = 2, .verbose = 0});
      return std::make_pair(h.history, model.get_weights());
    };
    auto [jit_history, jit_weights] = run(true);
    auto [plain_history, plain_weights] = run(false);
    CHECK(jit_history == plain_history);
    REQUIRE(jit_weights.size() == plain_weights.size());
    for (size_t i = 0; i < jit_weights.size(); ++i) CHECK(same_bits(jit_weights[i], plain_weights[i]));
  }
}
