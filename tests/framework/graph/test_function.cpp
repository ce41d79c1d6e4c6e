// ember::function: tracing, replay, variables by reference, TF's retracing rules and refusals.
#include <catch2/catch.hpp>

#include <cstdio>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <unistd.h>

#include "framework/ember.h"
#include "tests/support/half_testing.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using ember::testing::same_bits;

namespace {

Tensor sample(const Shape& s, uint64_t seed) { return random::normal(s, {.seed = seed}); }

// A training step a user writes: the mean of the model's squared outputs, the optimizer's update.
auto mean_square_step(Sequential& model, optimizers::Optimizer& opt) {
  return [&model, &opt](const Tensor& x) {
    std::vector<Variable> vars = model.trainable_weights();
    GradientTape tape;
    Tensor loss = ops::reduce_mean(ops::square(model(x, /*training=*/true)));
    opt.apply(tape.gradient(loss, vars), vars);
    return loss;
  };
}

// The index of g's first node of `kind`, or g.nodes.size().
size_t node_index(const graph::Graph& g, graph::NodeKind kind) {
  size_t k = 0;
  while (k < g.nodes.size() && g.nodes[k].kind != kind) ++k;
  return k;
}

}  // namespace

TEST_CASE("a function traces once per signature and replays eager's bits", "[function]") {
  int traced = 0;
  auto f = ember::function([&](const Tensor& x, const Tensor& w) {
    ++traced;  // a C++ side effect: runs only while tracing
    return ops::relu(ops::matmul(x, w) * 2.0f + 1.0f);
  });
  Tensor x = sample({4, 3}, 1), w = sample({3, 5}, 2);
  Tensor eager = ops::relu(ops::matmul(x, w) * 2.0f + 1.0f);
  CHECK(same_bits(f(x, w), eager));
  CHECK(same_bits(f(x, w), eager));
  Tensor x2 = sample({4, 3}, 3);
  CHECK(same_bits(f(x2, w), ops::relu(ops::matmul(x2, w) * 2.0f + 1.0f)));
  CHECK(f.tracing_count() == 1);
  CHECK(traced == 1);
  // A new shape is a new signature.
  Tensor x3 = sample({7, 3}, 4);
  CHECK(same_bits(f(x3, w), ops::relu(ops::matmul(x3, w) * 2.0f + 1.0f)));
  CHECK(f.tracing_count() == 2);
  CHECK(f.concrete_functions().size() == 2);
}

TEST_CASE("non-tensor arguments are part of the signature by value", "[function]") {
  auto f = ember::function([](const Tensor& x, double scale, bool negate) {
    Tensor y = x * scale;
    return negate ? -y : y;
  });
  Tensor x = sample({3}, 5);
  CHECK(same_bits(f(x, 2.0, false), x * 2.0));
  CHECK(same_bits(f(x, 2.0, false), x * 2.0));
  CHECK(f.tracing_count() == 1);
  CHECK(same_bits(f(x, 3.0, false), x * 3.0));
  CHECK(same_bits(f(x, 3.0, true), -(x * 3.0)));
  CHECK(f.tracing_count() == 3);
}

TEST_CASE("pairs, tuples and arrays are arguments element by element; string views by value", "[function]") {
  // The tensors in them are inputs (a new value replays), their plain values part of the signature: a
  // temporary at the address of an earlier one is not the earlier argument.
  auto f = ember::function([](const std::pair<Tensor, Tensor>& xy, const std::tuple<double, std::array<Tensor, 2>>& t) {
    const auto& [scale, zs] = t;
    return (xy.first + xy.second) * scale + zs[0] * zs[1];
  });
  for (const float v : {1.0f, 2.0f, 3.0f}) {
    const Tensor x = sample({3}, 20) * v, y = sample({3}, 21), z = sample({3}, 22) + v;
    CHECK(same_bits(f(std::pair{x, y}, std::tuple{2.0, std::array{z, x}}), (x + y) * 2.0 + z * x));
  }
  CHECK(f.tracing_count() == 1);
  const Tensor x = sample({3}, 23);
  CHECK(same_bits(f(std::pair{x, x}, std::tuple{3.0, std::array{x, x}}), (x + x) * 3.0 + x * x));
  CHECK(f.tracing_count() == 2);
  const Tensor s = sample({1}, 24);  // a seeded op draws anew on each call: one draw, used twice
  CHECK(same_bits(f(std::pair{x, x}, std::tuple{3.0, std::array{x, s}}), (x + x) * 3.0 + x * s));
  CHECK(f.tracing_count() == 3);

  auto act = ember::function([](const Tensor& t, std::string_view name) { return name == "relu" ? ops::relu(t) : -t; });
  const Tensor n = sample({4}, 25);
  for (const std::string_view name : {"relu", "neg"}) {
    INFO(name);
    CHECK(same_bits(act(n, name), name == "relu" ? ops::relu(n) : -n));
  }
  CHECK(act.tracing_count() == 2);
}

TEST_CASE("one tensor passed twice is two inputs of the graph", "[function]") {
  auto f = ember::function([](const Tensor& a, const Tensor& b) { return a - b; });
  Tensor x = sample({3}, 6), y = sample({3}, 7);
  CHECK(same_bits(f(x, x), x - x));
  CHECK(same_bits(f(x, y), x - y));
  CHECK(f.tracing_count() == 1);
}

TEST_CASE("a function returns tuples, vectors or nothing", "[function]") {
  Tensor x = sample({2, 2}, 8);
  auto pair = ember::function([](const Tensor& a) { return std::tuple<Tensor, Tensor>{a + 1.0f, a * 2.0f}; });
  for (int i = 0; i < 2; ++i) {
    auto [p, q] = pair(x);
    CHECK(same_bits(p, x + 1.0f));
    CHECK(same_bits(q, x * 2.0f));
  }
  auto list = ember::function([](const std::vector<Tensor>& xs) {
    std::vector<Tensor> out;
    for (const Tensor& t : xs) out.push_back(ops::exp(t));
    return out;
  });
  for (int i = 0; i < 2; ++i) {
    std::vector<Tensor> out = list(std::vector<Tensor>{x, x + 1.0f});
    REQUIRE(out.size() == 2);
    CHECK(same_bits(out[1], ops::exp(x + 1.0f)));
  }
  Variable v(Tensor::scalar<float>(0));
  auto bump = ember::function([&]() { v.assign_add(Tensor::scalar<float>(1)); });
  bump();
  bump();
  bump();
  CHECK(v.value().item<float>() == 3.0f);
  CHECK(bump.tracing_count() == 1);
}

TEST_CASE("variables are read and written by reference on every call", "[function]") {
  Variable v(Tensor::from_vector<float>({1, 2}), {.name = "v"});
  auto read = ember::function([&](const Tensor& x) { return x * v; });
  Tensor x = Tensor::from_vector<float>({10, 10});
  CHECK(read(x).to_vector<float>() == std::vector<float>{10, 20});
  v.assign(Tensor::from_vector<float>({3, 4}));
  CHECK(read(x).to_vector<float>() == std::vector<float>{30, 40});
  CHECK(read.tracing_count() == 1);

  // Read, assign, read again: the second read sees the assignment, on every call.
  auto step = ember::function([&]() {
    Tensor before = v.read_value();
    v.assign(before * 2.0f);
    return v.read_value() + before;
  });
  CHECK(step().to_vector<float>() == std::vector<float>{9, 12});  // v: 6, 8
  CHECK(step().to_vector<float>() == std::vector<float>{18, 24});  // v: 12, 16
  CHECK(v.value().to_vector<float>() == std::vector<float>{12, 16});
  const graph::Graph& g = step.concrete_functions()[0]->graph();
  CHECK(g.count(graph::NodeKind::ReadVariable) == 1);
  CHECK(g.count(graph::NodeKind::AssignVariable) == 1);
}

TEST_CASE("a whole training step traces into one graph and trains as eager does", "[function]") {
  auto make = [] {
    random::set_seed(11);
    auto model = std::make_unique<Sequential>();
    model->add(layers::Input({6}));
    model->add(layers::Dense(16, {.activation = "relu"}));
    model->add(layers::Dropout(0.25));
    model->add(layers::Dense(3));
    return model;
  };
  auto eager_model = make();
  auto traced_model = make();
  optimizers::Adam eager_opt({.learning_rate = 1e-2}), traced_opt({.learning_rate = 1e-2});
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
  auto eager_step = step_of(*eager_model, eager_opt);
  auto traced_step = ember::function(step_of(*traced_model, traced_opt));
  Tensor x = sample({8, 6}, 21);
  Tensor y = Tensor::from_vector<int32_t>({0, 1, 2, 0, 1, 2, 0, 1});
  std::vector<float> eager_losses, traced_losses;
  random::set_seed(5);
  for (int i = 0; i < 20; ++i) eager_losses.push_back(eager_step(x, y).item<float>());
  random::set_seed(5);
  for (int i = 0; i < 20; ++i) traced_losses.push_back(traced_step(x, y).item<float>());
  CHECK(traced_step.tracing_count() == 1);
  CHECK(traced_losses == eager_losses);
  CHECK(eager_losses.back() < eager_losses.front());
  std::vector<Variable> a = eager_model->weights(), b = traced_model->weights();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) CHECK(same_bits(a[i].value(), b[i].value()));
  CHECK(eager_opt.iterations().value().item<int64_t>() == traced_opt.iterations().value().item<int64_t>());
  // The graph holds the forward, the backward and the optimizer's update.
  const graph::Graph& g = traced_step.concrete_functions()[0]->graph();
  CHECK(g.count(OpId::matmul_bias) == 2);  // the first kernel's gradient reaches Adam as factors (batch 8)
  CHECK(g.count(OpId::matmul) == 2);  // the second layer's input gradient, and its kernel's (3 wide: factors don't pay)
  // Adam's update is one op on the variables in place, reading the step count and the rate as tensors.
  CHECK(g.count(graph::NodeKind::HostCall) == 0);
  CHECK(g.count(graph::NodeKind::UpdateVariables) == 1);
  std::ostringstream printed;
  printed << g;
  INFO(printed.str());
  CHECK(printed.str().find("update_variables['adam") != std::string::npos);
  CHECK(g.to_dot().rfind("digraph", 0) == 0);
  // Names with quotes, backslashes and line breaks are escaped in the DOT labels.
  Variable odd(Tensor::scalar(1.0f), {.name = "scale \"v2\"\\\n"});
  auto read = ember::function([&] { return odd.read_value() * 2.0f; });
  read();
  const std::string dot = read.concrete_functions()[0]->graph().to_dot();
  INFO(dot);
  CHECK(dot.find("scale \\\"v2\\\"\\\\\\n") != std::string::npos);
  CHECK(dot.find('\n', dot.find("scale")) > dot.find("];", dot.find("scale")));  // no raw line break inside the label
}

TEST_CASE("a traced optimizer update reads the learning rate and step count when it runs, and spares held values",
          "[function]") {
  // Adam, AdamW (its weight decay as ops before the update) and SGD with momentum: each update one op on the
  // variables in place, with eager's bits whether the kernel's gradient reaches it as factors or whole.
  using Make = std::function<std::unique_ptr<optimizers::Optimizer>()>;
  const std::vector<std::pair<std::string, Make>> optimizers_to_test = {
      {"adam", [] { return std::make_unique<optimizers::Adam>(optimizers::AdamOptions{.learning_rate = 1e-2}); }},
      {"adamw",
       [] { return std::make_unique<optimizers::AdamW>(optimizers::AdamWOptions{.learning_rate = 1e-2, .weight_decay = 0.05}); }},
      {"sgd", [] { return std::make_unique<optimizers::SGD>(optimizers::SGDOptions{.learning_rate = 1e-2, .momentum = 0.9}); }},
  };
  for (const auto& [kind, make_optimizer] : optimizers_to_test) {
    INFO(kind);
    auto make = [] {
      random::set_seed(13);
      auto model = std::make_unique<Sequential>();
      model->add(layers::Input({20}));
      model->add(layers::Dense(32, {.activation = "relu"}));
      model->add(layers::Dense(3));
      return model;
    };
    auto eager_model = make(), traced_model = make();
    std::unique_ptr<optimizers::Optimizer> eager_opt = make_optimizer(), traced_opt = make_optimizer();
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
    auto eager_step = step_of(*eager_model, *eager_opt);
    auto traced_step = ember::function(step_of(*traced_model, *traced_opt));
    const Tensor x2 = sample({2, 20}, 23), x16 = sample({16, 20}, 24);
    const Tensor y2 = Tensor::from_vector<int32_t>({0, 2});
    const Tensor y16 = ops::cast(random::uniform({16}, {.maxval = 3, .seed = 25}), DType::Int32);
    for (int i = 0; i < 6; ++i) {
      // A new rate between calls (a callback's set_learning_rate), and a weight's value held across a call.
      if (i == 3) {
        eager_opt->set_learning_rate(3e-3);
        traced_opt->set_learning_rate(3e-3);
      }
      const bool small = i % 2 == 0;  // batch 2 or 16: the first kernel's gradient as factors of 2 or 16 rows
      const Tensor held = traced_model->trainable_weights()[0].value();
      const Tensor held_copy = held.clone();
      const Tensor eager_loss = eager_step(small ? x2 : x16, small ? y2 : y16);
      const Tensor traced_loss = traced_step(small ? x2 : x16, small ? y2 : y16);
      CHECK(same_bits(traced_loss, eager_loss));
      CHECK(same_bits(held, held_copy));
      std::vector<Variable> a = eager_model->trainable_weights(), b = traced_model->trainable_weights();
      for (size_t k = 0; k < a.size(); ++k) CHECK(same_bits(a[k].value(), b[k].value()));
      std::vector<Variable> sa = eager_opt->variables(), sb = traced_opt->variables();
      REQUIRE(sa.size() == sb.size());
      for (size_t k = 0; k < sa.size(); ++k) CHECK(same_bits(sa[k].value(), sb[k].value()));
    }
    CHECK(traced_step.tracing_count() == 2);
    CHECK(traced_opt->iterations().value().item<int64_t>() == 6);
    for (const auto& cf : traced_step.concrete_functions()) {
      CHECK(cf->graph().count(graph::NodeKind::UpdateVariables) == 1);
      CHECK(cf->graph().count(graph::NodeKind::HostCall) == 0);
    }
  }
}

TEST_CASE("two training steps in one function: the second reads the weights the first updated in place",
          "[function]") {
  // Adam updates the weights in place, which keeps their tensors: the trace must read them again for the
  // second step, as it does after an assignment.
  auto make = [] {
    random::set_seed(12);
    auto model = std::make_unique<Sequential>();
    model->add(layers::Input({6}));
    model->add(layers::Dense(16, {.activation = "relu"}));
    model->add(layers::Dense(3));
    return model;
  };
  auto eager_model = make(), traced_model = make();
  optimizers::Adam eager_opt({.learning_rate = 1e-2}), traced_opt({.learning_rate = 1e-2});
  losses::SparseCategoricalCrossentropy loss_fn({.from_logits = true});
  auto step = [&](Sequential& model, optimizers::Optimizer& opt, const Tensor& x, const Tensor& y) {
    std::vector<Variable> vars = model.trainable_weights();
    GradientTape tape;
    Tensor loss = loss_fn(y, model(x, /*training=*/true));
    opt.apply(tape.gradient(loss, vars), vars);
    return loss;
  };
  auto two_steps = ember::function([&](const Tensor& x, const Tensor& y) {
    step(*traced_model, traced_opt, x, y);
    return step(*traced_model, traced_opt, x, y);
  });
  const Tensor x = sample({8, 6}, 22);
  const Tensor y = Tensor::from_vector<int32_t>({0, 1, 2, 0, 1, 2, 0, 1});
  std::vector<float> eager_losses, traced_losses;
  for (int i = 0; i < 3; ++i) {
    step(*eager_model, eager_opt, x, y);
    eager_losses.push_back(step(*eager_model, eager_opt, x, y).item<float>());
    traced_losses.push_back(two_steps(x, y).item<float>());
  }
  CHECK(two_steps.tracing_count() == 1);
  CHECK(traced_losses == eager_losses);
  std::vector<Variable> a = eager_model->weights(), b = traced_model->weights();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) CHECK(same_bits(a[i].value(), b[i].value()));
}

TEST_CASE("random ops draw new numbers on every call, in eager's sequence", "[function]") {
  auto draw = [](const Tensor& x) { return x + random::uniform({4}); };
  auto f = ember::function(draw);
  Tensor zero = ops::zeros({4});
  random::set_seed(3);
  std::vector<std::vector<float>> eager;
  for (int i = 0; i < 3; ++i) eager.push_back(draw(zero).to_vector<float>());
  random::set_seed(3);
  std::vector<std::vector<float>> traced;
  for (int i = 0; i < 3; ++i) traced.push_back(f(zero).to_vector<float>());
  CHECK(traced == eager);
  CHECK(traced[1] != traced[2]);

  // A seeded Dropout's masks follow its own call counter.
  layers::Dropout eager_drop(0.5, {.seed = 9}), traced_drop(0.5, {.seed = 9});
  auto drop = ember::function([&](const Tensor& x) { return traced_drop(x, true); });
  Tensor ones = ops::ones({64});
  for (int i = 0; i < 3; ++i) CHECK(same_bits(drop(ones), eager_drop(ones, true)));
}

TEST_CASE("get_concrete_function and a branch's trace put the generator back, but not past a layer's initial weights",
          "[function]") {
  // As TF lifts initialisers out of the function, the draws of a layer built while traced stay drawn: the layer
  // built next gets other weights, and what the calls draw follows as in eager execution.
  enum How { Eager, Called, Concrete, Branch };
  auto run = [](How how) {
    random::set_seed(1);
    layers::Dense a(3), b(3);
    layers::Dropout drop(0.5);
    auto body = [&](const Tensor& x) { return drop(a(x), true); };
    auto f = ember::function([&](const Tensor& x) {
      if (how == Branch)
        return ops::cond(ops::greater(ops::reduce_sum(x), Tensor::scalar(-1.0f)), [&] { return body(x); },
                         [&] { return ops::zeros({1, 3}); });
      return body(x);
    });
    const Tensor x = ops::ones({1, 3});
    std::vector<std::vector<float>> out(4);
    if (how == Eager) {
      a(x);
      b(x);
      out[2] = body(x).to_vector<float>();
      out[3] = body(x).to_vector<float>();
    } else if (how == Concrete) {
      (void)f.get_concrete_function(TensorSpec({1, 3}));
      b(x);
      out[2] = f(x).to_vector<float>();
      out[3] = f(x).to_vector<float>();
    } else {
      out[2] = f(x).to_vector<float>();
      b(x);
      out[3] = f(x).to_vector<float>();
    }
    out[0] = a.weights()[0].value().to_vector<float>();
    out[1] = b.weights()[0].value().to_vector<float>();
    return out;
  };
  const auto eager = run(Eager), called = run(Called), concrete = run(Concrete), branch = run(Branch);
  CHECK(eager[0] != eager[1]);
  CHECK(called[0] != called[1]);
  CHECK(concrete == eager);  // built, then the other built, then two calls
  CHECK(branch == called);   // built in the first call, which draws its mask before the other is built
  CHECK(called[0] == eager[0]);
  CHECK(called[1] != eager[1]);
}

TEST_CASE("a second update in one function reads the first one's weights, also after get_concrete_function",
          "[function]") {
  // get_concrete_function records the updates without running them: the second step's read of the weights must
  // still be a read of its own, after the first update.
  const Tensor x = sample({4, 3}, 30), w0 = sample({3, 2}, 31);
  auto run = [&](bool traced, bool concrete) {
    Variable w(w0.clone(), {.name = "w"});
    optimizers::SGD opt({.learning_rate = 0.1});
    auto two_steps = [&](const Tensor& in) {
      for (int i = 0; i < 2; ++i) {
        GradientTape tape;
        Tensor loss = ops::reduce_sum(ops::square(ops::matmul(in, w.read_value())));
        opt.apply(tape.gradient(loss, {w}), {w});
      }
      return w.read_value() * 1.0f;
    };
    auto f = ember::function(two_steps);
    if (concrete) (void)f.get_concrete_function(TensorSpec({4, 3}));
    std::vector<std::vector<float>> out;
    for (int call = 0; call < 2; ++call) out.push_back((traced ? f(x) : two_steps(x)).to_vector<float>());
    return out;
  };
  const auto eager = run(false, false);
  CHECK(run(true, false) == eager);
  CHECK(run(true, true) == eager);
}

TEST_CASE("a seeded layer's masks keep eager's sequence after get_concrete_function and inside a branch", "[function]") {
  const Tensor ones = ops::ones({64});
  layers::Dropout eager_drop(0.5, {.seed = 11});
  std::vector<std::vector<float>> eager;
  for (int i = 0; i < 3; ++i) eager.push_back(eager_drop(ones, true).to_vector<float>());
  CHECK(eager[0] != eager[1]);

  layers::Dropout drop(0.5, {.seed = 11});
  auto f = ember::function([&](const Tensor& x) { return drop(x, true); });
  (void)f.get_concrete_function(TensorSpec({64}));
  for (int i = 0; i < 3; ++i) CHECK(f(ones).to_vector<float>() == eager[static_cast<size_t>(i)]);

  layers::Dropout in_branch(0.5, {.seed = 11});
  auto g = ember::function([&](const Tensor& x) {
    return ops::cond(ops::greater(ops::reduce_sum(x), Tensor::scalar(0.0f)), [&] { return in_branch(x, true); },
                     [&] { return x; });
  });
  for (int i = 0; i < 3; ++i) CHECK(g(ones).to_vector<float>() == eager[static_cast<size_t>(i)]);
}

TEST_CASE("an unseeded permutation draws anew on every call, in eager's sequence", "[function]") {
  auto shuffle = [](const Tensor& x) { return ops::gather(x, random::permutation(x.shape()[0])); };
  auto f = ember::function(shuffle);
  const Tensor x = ops::cast(ops::range(0, 16), DType::Float32);
  random::set_seed(4);
  std::vector<std::vector<float>> eager;
  for (int i = 0; i < 3; ++i) eager.push_back(shuffle(x).to_vector<float>());
  random::set_seed(4);
  for (int i = 0; i < 3; ++i) CHECK(f(x).to_vector<float>() == eager[static_cast<size_t>(i)]);
  CHECK(eager[1] != eager[2]);
  // A seeded one is the same every time, traced once as a constant.
  auto seeded = ember::function([](const Tensor& t) { return ops::gather(t, random::permutation(16, 5)); });
  CHECK(seeded(x).to_vector<float>() == ops::gather(x, random::permutation(16, 5)).to_vector<float>());
  CHECK(seeded(x).to_vector<float>() == ops::gather(x, random::permutation(16, 5)).to_vector<float>());
}

TEST_CASE("reading a traced value on the host is refused, naming cond and while_loop", "[function]") {
  auto f = ember::function([](const Tensor& x) {
    if (ops::reduce_sum(x).item<float>() > 0) return x;
    return -x;
  });
  Tensor x = sample({3}, 4);
  CHECK_THROWS_AS(f(x), InvalidArgument);
  try {
    f(x);
  } catch (const InvalidArgument& e) {
    CHECK(std::string(e.what()).find("ops::cond") != std::string::npos);
    CHECK(std::string(e.what()).find("ops::while_loop") != std::string::npos);
  }
  CHECK(f.tracing_count() == 0);
  // A constant made outside is not traced: reading it is fine.
  Tensor c = Tensor::scalar<float>(2);
  auto g = ember::function([&](const Tensor& t) { return t * c.item<float>(); });
  CHECK(same_bits(g(x), x * 2.0f));
}

TEST_CASE("ops::print runs on every call, C++ output only while tracing", "[function]") {
  std::ostringstream out;
  int cxx_prints = 0;
  auto f = ember::function([&](const Tensor& x) {
    ++cxx_prints;
    Tensor y = x * 2.0f;
    ops::print({std::string("y:"), y}, {.output_stream = &out});
    return y;
  });
  f(Tensor::from_vector<float>({1}));
  f(Tensor::from_vector<float>({5}));
  CHECK(cxx_prints == 1);
  const std::string text = out.str();
  CHECK(text.find("y: ember.Tensor([2.]") != std::string::npos);
  CHECK(text.find("y: ember.Tensor([10.]") != std::string::npos);
}

TEST_CASE("input_signature pins the inputs", "[function]") {
  auto f = ember::function([](const Tensor& x) { return x + 1.0f; },
                           {.input_signature = std::vector<TensorSpec>{TensorSpec({2}, DType::Float32, "x")}});
  CHECK(f(ops::zeros({2})).to_vector<float>() == std::vector<float>{1, 1});
  try {
    f(ops::zeros({3}));
    FAIL("expected InvalidArgument");
  } catch (const InvalidArgument& e) {
    CHECK(std::string(e.what()).find("argument 'x'") != std::string::npos);
  }
  CHECK_THROWS_AS(f(ops::zeros({2}, DType::Int32)), InvalidArgument);
  CHECK(f.get_concrete_function(TensorSpec({2})).input_specs().size() == 1);
  CHECK(f.tracing_count() == 1);  // the call's trace
  CHECK_THROWS_AS(f.get_concrete_function(TensorSpec({5})), InvalidArgument);  // not the input_signature
  CHECK_THROWS_AS(ember::function([](const Tensor& x) { return x; }).get_concrete_function(TensorSpec({-1, 2})),
                  Unimplemented);
}

TEST_CASE("get_concrete_function traces a training step without running it", "[function]") {
  auto make = [] {
    random::set_seed(3);
    auto model = std::make_unique<Sequential>();
    model->add(layers::Input({5}));
    model->add(layers::Dense(8));
    model->add(layers::BatchNormalization());
    model->add(layers::Dropout(0.3));
    model->add(layers::Dense(3));
    return model;
  };
  auto eager_model = make();
  auto traced_model = make();
  optimizers::Adam eager_opt, traced_opt;
  losses::SparseCategoricalCrossentropy loss_fn({.from_logits = true});
  int traces = 0;
  std::ostringstream printed;
  auto step_of = [&](Sequential& model, optimizers::Optimizer& opt, bool traced) {
    return [&, traced](const Tensor& x, const Tensor& y) {
      if (traced) ++traces;
      std::vector<Variable> vars = model.trainable_weights();
      GradientTape tape;
      Tensor loss = loss_fn(y, model(x, /*training=*/true));
      opt.apply(tape.gradient(loss, vars), vars);
      ops::print({std::string("loss"), loss}, {.output_stream = &printed});
      return loss;
    };
  };
  auto eager_step = step_of(*eager_model, eager_opt, false);
  auto traced_step = ember::function(step_of(*traced_model, traced_opt, true));
  std::vector<Tensor> before;
  for (const Variable& v : traced_model->weights()) before.push_back(v.value());
  random::set_seed(9);
  const ConcreteFunction& cf = traced_step.get_concrete_function(TensorSpec({4, 5}), TensorSpec({4}, DType::Int32));
  CHECK(traces == 1);
  CHECK(traced_step.tracing_count() == 1);
  CHECK(cf.graph().count(graph::NodeKind::UpdateVariables) == 1);  // Adam's update and the print, recorded
  CHECK(cf.graph().count(graph::NodeKind::HostCall) >= 1);
  CHECK(printed.str().empty());                             // ...not run
  CHECK(traced_opt.iterations().value().item<int64_t>() == 0);
  std::vector<Variable> after = traced_model->weights();  // BatchNormalization's moving statistics included
  REQUIRE(after.size() == before.size());
  for (size_t i = 0; i < after.size(); ++i) CHECK(same_bits(after[i].value(), before[i]));
  // The random generator is where it was: the calls below draw eager's dropout masks.
  Tensor x = sample({4, 5}, 17);
  Tensor y = Tensor::from_vector<int32_t>({0, 2, 1, 2});
  std::vector<float> eager_losses, traced_losses;
  random::set_seed(9);
  for (int i = 0; i < 4; ++i) eager_losses.push_back(eager_step(x, y).item<float>());
  random::set_seed(9);
  (void)traced_step.get_concrete_function(TensorSpec({4, 5}), TensorSpec({4}, DType::Int32));
  for (int i = 0; i < 4; ++i) traced_losses.push_back(traced_step(x, y).item<float>());
  CHECK(traces == 1);  // the calls replay what get_concrete_function traced
  CHECK(traced_losses == eager_losses);
  std::vector<Variable> a = eager_model->weights(), b = traced_model->weights();
  for (size_t i = 0; i < a.size(); ++i) CHECK(same_bits(a[i].value(), b[i].value()));
  CHECK(traced_opt.iterations().value().item<int64_t>() == 4);
  CHECK(printed.str().find("loss") != std::string::npos);  // printed on every call
}

TEST_CASE("a function is differentiable under an outer tape, and nests", "[function]") {
  auto square = ember::function([](const Tensor& x) { return x * x; });
  Tensor x = Tensor::from_vector<float>({1, 2, 3});
  square(x);  // traced
  GradientTape tape;
  tape.watch(x);
  Tensor y = ops::reduce_sum(square(x));  // replayed, recorded by the tape
  CHECK(tape.gradient(y, x).to_vector<float>() == std::vector<float>{2, 4, 6});

  auto outer = ember::function([&](const Tensor& t) { return square(t) + 1.0f; });
  CHECK(outer(x).to_vector<float>() == std::vector<float>{2, 5, 10});
  CHECK(outer(x).to_vector<float>() == std::vector<float>{2, 5, 10});
  CHECK(square.tracing_count() == 1);  // inlined into outer's trace, not traced again
}

TEST_CASE("an outer tape differentiates a replay as traced, with eager's bits where the compiler merges ops",
          "[function]") {
  // Three casts of one weight to half, merged into one by the compiler: eager widens each cast's gradient before
  // the sum; a tape recording the replay must see the three.
  for (const DType half : {DType::BFloat16, DType::Float16}) {
    INFO(dtype_name(half));
    Variable w(sample({8, 8}, 1), {.name = "w"});
    const Tensor x = sample({16, 8}, 2);
    auto body = [&](const Tensor& in) { return ember::testing::three_half_steps(in, w, half); };
    auto f = ember::function(body);
    auto grad = [&](bool traced) {
      GradientTape tape;
      Tensor h = traced ? f(x) : body(x);
      return tape.gradient(ops::reduce_sum(ops::square(h)), {w})[0];
    };
    const Tensor eager = grad(false);
    for (int call = 0; call < 3; ++call) CHECK(same_bits(grad(true), eager));  // the trace, then replays
    if (half == DType::BFloat16) CHECK(f.concrete_functions()[0]->graph().count(OpId::cast) < 4);  // merged
    CHECK(same_bits(f(x), body(x)));
  }
}

TEST_CASE("a layer built inside a trace initialises its weights once", "[function]") {
  layers::Dense dense(4);
  auto f = ember::function([&](const Tensor& x) { return dense(x); });
  Tensor x = sample({2, 3}, 12);
  Tensor first = f(x);
  Tensor kernel = dense.weights()[0].value();
  CHECK(same_bits(f(x), first));
  CHECK(same_bits(dense.weights()[0].value(), kernel));
  // Creating a variable from a traced value is refused.
  auto bad = ember::function([](const Tensor& t) {
    Variable v(t * 2.0f);
    return v.read_value();
  });
  CHECK_THROWS_AS(bad(x), InvalidArgument);
}

namespace {
// What the code run by `fn` writes to stderr (the ember logger's sink).
template <class Fn>
std::string captured_stderr(Fn&& fn) {
  std::fflush(stderr);
  char path[] = "/tmp/ember_stderr_XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  const int saved = dup(2);
  dup2(fd, 2);
  fn();
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  std::string out;
  char buf[4096];
  lseek(fd, 0, SEEK_SET);
  while (true) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  unlink(path);
  return out;
}
size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}
}  // namespace

TEST_CASE("frequent retracing warns through the logger, at most twice", "[function]") {
  auto f = ember::function([](const Tensor& x) { return x * 2.0f; }, {.name = "shape_changer"});
  const std::string four = captured_stderr([&] {
    for (int64_t n = 1; n <= 4; ++n) f(ops::zeros({n}));
  });
  CHECK(four.find("retracing") == std::string::npos);  // 4 of the last 4 calls: below TF's threshold of 5
  const std::string many = captured_stderr([&] {
    for (int64_t n = 5; n <= 12; ++n) f(ops::zeros({n}));
  });
  CHECK(many.find("5 out of the last 5 calls to 'shape_changer' triggered ember::function retracing") !=
        std::string::npos);
  CHECK(count_of(many, "triggered ember::function retracing") == 2);
  CHECK(f.tracing_count() == 12);
}

TEST_CASE("threads may call one function at once", "[function]") {
  auto f = ember::function([](const Tensor& x) { return ops::tanh(ops::matmul(x, x)) + 1.0f; });
  std::vector<Tensor> inputs, expected;
  for (uint64_t i = 0; i < 4; ++i) {
    inputs.push_back(sample({6, 6}, 30 + i));
    expected.push_back(ops::tanh(ops::matmul(inputs.back(), inputs.back())) + 1.0f);
  }
  std::vector<char> ok(4, 0);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      bool all = true;
      for (int i = 0; i < 50; ++i) all = all && same_bits(f(inputs[t]), expected[t]);
      ok[t] = all;
    });
  for (std::thread& t : threads) t.join();
  CHECK(ok == std::vector<char>(4, 1));
  CHECK(f.tracing_count() >= 1);
  CHECK(f.concrete_functions().size() == 1);  // however many threads traced at first
}

TEST_CASE("a replay holds no buffer once it returns", "[function]") {
  // The executor keeps a finished run's vectors for the next run: they must drop every value, or a caller's
  // input and the intermediates would stay allocated (and a variable's buffer would be shared at its update).
  Variable w(sample({16, 16}, 40));
  auto f = ember::function([&w](const Tensor& x) {
    Tensor y = ops::tanh(ops::matmul(x, w.read_value()));
    w.assign_sub(y * 0.5f);
    return ops::reduce_sum(y);
  });
  const Device cpu = Device::cpu();
  f(sample({16, 16}, 41));  // traces
  f(sample({16, 16}, 41));  // the first replay makes the arena of its memory plan, kept for the next replays
  for (uint64_t i = 0; i < 3; ++i) {
    const int64_t before = config::memory_info(cpu).bytes_in_use;
    {
      const Tensor x = sample({16, 16}, 42 + i);
      const Tensor expected_w = w.value() - ops::tanh(ops::matmul(x, w.value())) * 0.5f;
      const Tensor loss = f(x);
      CHECK(same_bits(w.value(), expected_w));
    }
    CHECK(config::memory_info(cpu).bytes_in_use == before);
  }
}

TEST_CASE("elementwise ops reuse a dying input's buffer, but not under a tape that saved it", "[function]") {
  auto f = ember::function([](const Tensor& x) { return ops::exp(x * 3.0f) * 2.0f + 1.0f; });
  Tensor x = Tensor::from_vector<float>({0.1f, 0.2f, 0.3f});
  const Tensor expected = ops::exp(x * 3.0f) * 2.0f + 1.0f;
  CHECK(same_bits(f(x), expected));
  CHECK(same_bits(f(x), expected));
  size_t in_place = 0;
  for (const graph::Node& n : f.concrete_functions()[0]->graph().nodes) in_place += n.in_place_input >= 0;
  CHECK(in_place == 3);  // exp, the second mul and add overwrite the temporary they read; x is the caller's
  CHECK(x.to_vector<float>() == std::vector<float>{0.1f, 0.2f, 0.3f});
  GradientTape tape;
  tape.watch(x);
  Tensor y = ops::reduce_sum(f(x));
  const Tensor expected_grad = ops::exp(x * 3.0f) * 6.0f;  // d/dx 2 exp(3x)
  // A tape records the replayed ops: none may overwrite what the tape saved for the gradient.
  const Tensor grad = tape.gradient(y, x);
  CHECK(ops::reduce_max(ops::abs(grad - expected_grad)).item<float>() < 1e-5f);
}

TEST_CASE("an op reading two views of one dying buffer does not write into it", "[function]") {
  // `a - a.slice_rows(0, 1)` written into a would zero row 0 before the later rows read it; overlapping rows the same.
  const Tensor x = ops::reshape(ops::cast(ops::range(1, 33), DType::Float32), {8, 4});
  const auto first_row = [](const Tensor& t) {
    Tensor a = ops::exp(t * 0.0f) * t;
    return a - a.slice_rows(0, 1);
  };
  const auto overlapping = [](const Tensor& t) {
    Tensor a = t * 2.0f;
    return a.slice_rows(1, 8) + a.slice_rows(0, 7);
  };
  for (const bool jit : {false, true}) {
    INFO("jit_compile " << jit);
    auto f = ember::function(first_row, {.jit_compile = jit});
    auto g = ember::function(overlapping, {.jit_compile = jit});
    for (int call = 0; call < 3; ++call) {
      CHECK(same_bits(f(x), first_row(x)));
      CHECK(same_bits(g(x), overlapping(x)));
    }
  }
}

TEST_CASE("a replay checks indices as the front end does", "[function]") {
  Tensor table = Tensor::from_vector<float>({1, 2, 3});
  auto pick = ember::function([&](const Tensor& i) { return ops::gather(table, i); });
  CHECK(pick(Tensor::from_vector<int32_t>({2, 0})).to_vector<float>() == std::vector<float>{3, 1});
  CHECK_THROWS_WITH(pick(Tensor::from_vector<int32_t>({1, 3})), Catch::Contains("gather: indices[1] = 3 is not in [0, 3)"));
  auto loss = ember::function([](const Tensor& labels, const Tensor& logits) {
    return ops::sparse_softmax_cross_entropy_with_logits(labels, logits);
  });
  Tensor logits = sample({2, 4}, 9);
  loss(Tensor::from_vector<int32_t>({0, 3}), logits);
  CHECK_THROWS_AS(loss(Tensor::from_vector<int32_t>({0, 4}), logits), InvalidArgument);
  CHECK(pick.tracing_count() == 1);
}

TEST_CASE("a kernel gradient reaches Adam's update as its factors, with eager's bits", "[function]") {
  for (int64_t batch : {1, 3, 8, 9, 64}) {
    auto make = [] {
      random::set_seed(11);
      auto model = std::make_unique<Sequential>();
      model->add(layers::Input({40}));
      model->add(layers::Dense(32, {.activation = "relu"}));
      model->add(layers::Dense(20));
      return model;
    };
    auto eager_model = make(), traced_model = make();
    optimizers::Adam eager_opt({.learning_rate = 1e-2}), traced_opt({.learning_rate = 1e-2});
    auto eager_step = mean_square_step(*eager_model, eager_opt);
    auto traced_step = ember::function(mean_square_step(*traced_model, traced_opt));
    for (int i = 0; i < 4; ++i) {
      Tensor x = sample({batch, 40}, 30 + static_cast<uint64_t>(i));
      CHECK(same_bits(eager_step(x), traced_step(x)));
    }
    std::vector<Variable> a = eager_model->weights(), b = traced_model->weights();
    for (size_t i = 0; i < a.size(); ++i) CHECK(same_bits(a[i].value(), b[i].value()));
    // Up to 8 rows neither kernel gradient is a product in the graph any more: Adam's update op on the CPU makes
    // them in registers. Above, matmul makes them.
    const graph::Graph& g = traced_step.concrete_functions()[0]->graph();
    CHECK(g.count(OpId::matmul) == (batch <= 8 ? 1u : 3u));  // and the second layer's input gradient
    if (batch > 8) {
      // The products stay where the backward pass made them: moved to the update, they would hold their
      // operands until then, and every gradient is alive at the update anyway (sink_kernel_gradients).
      const size_t update = node_index(g, graph::NodeKind::UpdateVariables);
      REQUIRE(update < g.nodes.size());
      CHECK_FALSE(g.nodes[update - 1].op == OpId::matmul);
    }
  }
}

TEST_CASE("a large kernel gradient is made right before the update where that lowers the step's peak",
          "[function]") {
  // The dense layer's kernel gradient (3136 x 64 floats) is far larger than its operands; made where the backward
  // pass reaches it, it would be held through the convolution's gradients.
  auto make = [] {
    random::set_seed(5);
    auto model = std::make_unique<Sequential>();
    model->add(layers::Input({16, 16, 8}));
    model->add(layers::Conv2D(16, 3, {.activation = "relu"}));
    model->add(layers::Flatten());
    model->add(layers::Dense(64, {.activation = "relu"}));
    model->add(layers::Dense(3));
    return model;
  };
  auto eager_model = make(), traced_model = make();
  optimizers::Adam eager_opt({.learning_rate = 1e-2}), traced_opt({.learning_rate = 1e-2});
  auto eager_step = mean_square_step(*eager_model, eager_opt);
  auto traced_step = ember::function(mean_square_step(*traced_model, traced_opt));
  for (int i = 0; i < 3; ++i) {
    Tensor x = sample({16, 16, 16, 8}, 40 + static_cast<uint64_t>(i));
    CHECK(same_bits(eager_step(x), traced_step(x)));
  }
  std::vector<Variable> a = eager_model->weights(), b = traced_model->weights();
  for (size_t i = 0; i < a.size(); ++i) CHECK(same_bits(a[i].value(), b[i].value()));
  const graph::Graph& g = traced_step.concrete_functions()[0]->graph();
  const size_t update = node_index(g, graph::NodeKind::UpdateVariables);
  REQUIRE(update < g.nodes.size());
  const graph::Node& before = g.nodes[update - 1];
  CHECK(before.op == OpId::matmul);
  CHECK(g.values[static_cast<size_t>(before.outputs[0])].shape == Shape{3136, 64});
}

TEST_CASE("a kernel gradient read by a second optimizer's update keeps eager's bits", "[function]") {
  // dw = v^T @ dy reads the variable v, which another optimizer updates (in place) between the gradient and w's
  // update: the product must read v's old value, as eager does.
  const Tensor v0 = sample({9, 5}, 21), w0 = sample({5, 3}, 22);
  Variable eager_v(v0 * 1.0f, {.name = "v"}), traced_v(v0 * 1.0f, {.name = "v"});
  Variable eager_w(w0 * 1.0f, {.name = "w"}), traced_w(w0 * 1.0f, {.name = "w"});
  optimizers::Adam eager_opt_v({.learning_rate = 1e-2}), traced_opt_v({.learning_rate = 1e-2});
  optimizers::Adam eager_opt_w({.learning_rate = 1e-2}), traced_opt_w({.learning_rate = 1e-2});
  auto step_of = [](Variable& v, Variable& w, optimizers::Optimizer& opt_v, optimizers::Optimizer& opt_w) {
    return [&]() {
      GradientTape tape;
      tape.watch(v);
      tape.watch(w);
      Tensor loss = ops::reduce_sum(ops::square(ops::matmul(v.value(), w.value())));
      std::vector<Tensor> grads = tape.gradient(loss, std::vector<Variable>{v, w});
      opt_v.apply({grads[0]}, {v});
      opt_w.apply({grads[1]}, {w});
      return loss;
    };
  };
  auto eager_step = step_of(eager_v, eager_w, eager_opt_v, eager_opt_w);
  auto traced_step = ember::function(step_of(traced_v, traced_w, traced_opt_v, traced_opt_w));
  for (int i = 0; i < 3; ++i) CHECK(same_bits(eager_step(), traced_step()));
  CHECK(same_bits(eager_w.value(), traced_w.value()));
  CHECK(same_bits(eager_v.value(), traced_v.value()));
}

TEST_CASE("a kernel gradient with two contributions reaches the optimizer whole, with eager's bits", "[function]") {
  for (int64_t batch : {1, 8}) {
    const Tensor w0 = sample({6, 5}, 7);
    Variable eager_w(w0 * 1.0f, {.name = "w"}), traced_w(w0 * 1.0f, {.name = "w"});  // two buffers
    optimizers::Adam eager_opt({.learning_rate = 1e-2}), traced_opt({.learning_rate = 1e-2});
    auto step_of = [](Variable& w, optimizers::Optimizer& opt) {
      return [&](const Tensor& x) {
        GradientTape tape;
        tape.watch(w);
        Tensor y = ops::matmul(x, w.value()) + ops::matmul(x * 2.0f, w.value());  // w read twice
        Tensor loss = ops::reduce_sum(ops::square(y));
        opt.apply(tape.gradient(loss, std::vector<Variable>{w}), {w});
        return loss;
      };
    };
    auto eager_step = step_of(eager_w, eager_opt);
    auto traced_step = ember::function(step_of(traced_w, traced_opt));
    for (int i = 0; i < 3; ++i) {
      Tensor x = sample({batch, 6}, 40 + static_cast<uint64_t>(i));
      CHECK(same_bits(eager_step(x), traced_step(x)));
    }
    CHECK(same_bits(eager_w.value(), traced_w.value()));
    // Two forward products and the two kernel-gradient products their sum needs: nothing folded.
    CHECK(traced_step.concrete_functions()[0]->graph().count(OpId::matmul) == 4u);
  }
}
