// CUDA graphs for a traced function's replays: which runs of nodes are captured (plan_device_segments, on any
// machine), and on a GPU ([cuda], skipped without one) that captured steps give eager execution's bits, fall back
// to op-by-op runs where a capture cannot hold, and serve fit's compiled steps.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "framework/ember.h"
#include "framework/graph/executor.h"
#include "tests/support/graph_builder.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using ember::testing::same_bits;
using graph::SegmentPlan;

namespace {

constexpr Device kGpu = Device::cuda(0);

struct GpuBuilder : ember::testing::GraphBuilder {
  GpuBuilder() { device = kGpu; }
};

std::vector<int> nodes_of(const SegmentPlan& p) {
  std::vector<int> out;
  for (int k = p.begin; k < p.end; ++k) out.push_back(k);
  return out;
}

}  // namespace

TEST_CASE("device segments: runs of GPU ops, with their inputs and outputs", "[function][cuda_graphs]") {
  const Shape s{4};
  GpuBuilder b;
  const int x = b.input(s);
  const int a = b.op(OpId::exp, {x}, s);
  const int c = b.op(OpId::tanh, {a}, s);
  const int d = b.op(OpId::add, {c, x}, s);
  b.g.outputs = {d};
  const std::vector<SegmentPlan> plans = graph::plan_device_segments(b.g);
  REQUIRE(plans.size() == 1);
  CHECK(nodes_of(plans[0]) == std::vector<int>{0, 1, 2});
  CHECK(plans[0].device == kGpu);
  CHECK(plans[0].inputs == std::vector<int>{x});
  CHECK(plans[0].outputs == std::vector<int>{d});
  CHECK(plans[0].variables.empty());
}

TEST_CASE("device segments: host calls, random ops, CPU nodes and host inputs split them", "[function][cuda_graphs]") {
  const Shape s{4};
  GpuBuilder b;
  const int x = b.input(s);
  const int e = b.op(OpId::exp, {x}, s);
  const int t = b.op(OpId::tanh, {e}, s);  // segment 0: nodes 0, 1
  graph::Node host;
  host.kind = graph::NodeKind::HostCall;
  host.inputs = {t};
  host.name = "print";
  const int h = b.node(host, s);                                                    // node 2
  const int r = b.op(OpId::random_uniform, {}, s, RandomAttrs{.shape = s});       // node 3: a new draw per call
  const int m = b.op(OpId::mul, {h, r}, s);                                       // segment 1: nodes 4, 5
  const int n = b.op(OpId::neg, {m}, s);
  b.device = Device::cpu();
  const int host_value = b.input(s);
  b.device = kGpu;
  const int u = b.op(OpId::add, {n, host_value}, s);  // node 6: reads a host tensor that is no constant
  const int w = b.op(OpId::sqrt, {u}, s);             // node 7 alone: too short for a graph
  b.g.outputs = {w};
  const std::vector<SegmentPlan> plans = graph::plan_device_segments(b.g);
  REQUIRE(plans.size() == 2);
  CHECK(nodes_of(plans[0]) == std::vector<int>{0, 1});
  CHECK(plans[0].outputs == std::vector<int>{t});  // read by the host call
  CHECK(nodes_of(plans[1]) == std::vector<int>{4, 5});
  CHECK(plans[1].inputs == std::vector<int>{h, r});
  CHECK(plans[1].outputs == std::vector<int>{n});

  SECTION("a 0-d host constant is uploaded once, at capture: it does not split") {
    GpuBuilder c;
    const int y = c.input(s);
    c.device = Device::cpu();
    const int two = c.value({});
    c.g.values[static_cast<size_t>(two)].constant = Tensor::scalar<float>(2.0f);
    c.device = kGpu;
    const int p = c.op(OpId::mul, {y, two}, s);
    c.g.outputs = {c.op(OpId::exp, {p}, s)};
    const std::vector<SegmentPlan> q = graph::plan_device_segments(c.g);
    REQUIRE(q.size() == 1);
    CHECK(nodes_of(q[0]) == std::vector<int>{0, 1});
    CHECK(q[0].inputs == std::vector<int>{y});  // constants are read where they are
  }
  SECTION("a graph on the CPU has none") {
    ember::testing::GraphBuilder c;
    const int y = c.input(s);
    c.g.outputs = {c.op(OpId::exp, {c.op(OpId::tanh, {y}, s)}, s)};
    CHECK(graph::plan_device_segments(c.g).empty());
  }
}

TEST_CASE("device segments: variables are read in the graph only where their buffer stays theirs",
          "[function][cuda_graphs]") {
  const Shape s{4};
  Variable kept(ops::zeros(s)), assigned(ops::zeros(s)), returned(ops::zeros(s));
  GpuBuilder b;
  const int x = b.input(s);
  const int r2 = b.read(assigned);                         // node 0: the graph assigns it, so its buffer changes
  const int r3 = b.read(returned);                         // node 1: its buffer is returned
  const int r1 = b.read(kept);                             // node 2: stays in
  const int a = b.op(OpId::add, {x, r1}, s);               // node 3
  const int c = b.op(OpId::mul, {a, r2}, s);               // node 4
  const int d = b.op(OpId::sub, {c, r3}, s);               // node 5
  b.assign(assigned, d);                                   // node 6
  b.g.outputs = {d, r3};
  std::vector<SegmentPlan> plans = graph::plan_device_segments(b.g);
  REQUIRE(plans.size() == 1);
  // The two reads whose buffers are not the graph's run before it, in its run.
  CHECK(nodes_of(plans[0]) == std::vector<int>{0, 1, 2, 3, 4, 5});
  CHECK(plans[0].hoisted == std::vector<int>{0, 1});
  CHECK(plans[0].variables == std::vector<int>{2});
  CHECK(plans[0].inputs == std::vector<int>{x, r2, r3});  // copied into the graph's buffers on every call
  CHECK(plans[0].outputs == std::vector<int>{d});

  SECTION("a read left out by the caller (its variable moved between calls) is an input") {
    GpuBuilder e;
    const int y = e.input(s);
    const int q = e.read(kept);
    const int f = e.op(OpId::add, {y, q}, s);
    e.g.outputs = {e.op(OpId::exp, {f}, s)};
    std::vector<SegmentPlan> in = graph::plan_device_segments(e.g);
    REQUIRE(in.size() == 1);
    CHECK(in[0].variables == std::vector<int>{0});
    CHECK(in[0].inputs == std::vector<int>{y});
    std::vector<SegmentPlan> out = graph::plan_device_segments(e.g, {0});
    REQUIRE(out.size() == 1);
    CHECK(nodes_of(out[0]) == std::vector<int>{0, 1, 2});
    CHECK(out[0].hoisted == std::vector<int>{0});
    CHECK(out[0].variables.empty());
    CHECK(out[0].inputs == std::vector<int>{y, q});
  }
}

TEST_CASE("device segments: an op writing into a buffer made outside its run runs outside", "[function][cuda_graphs]") {
  const Shape s{4};
  GpuBuilder b;
  const int x = b.input(s);
  const int e = b.op(OpId::exp, {x}, s);
  graph::Node n;
  n.op = OpId::relu;
  n.inputs = {x};
  n.specs = {OutputSpec{s, DType::Float32, /*alias_input=*/0}};
  const int w = b.node(n, s);  // writes into the function's input
  const int t = b.op(OpId::tanh, {e}, s);
  const int u = b.op(OpId::add, {t, w}, s);
  b.g.outputs = {b.op(OpId::exp, {u}, s)};
  const std::vector<SegmentPlan> plans = graph::plan_device_segments(b.g);
  REQUIRE(plans.size() == 1);
  CHECK(nodes_of(plans[0]) == std::vector<int>{2, 3, 4});
}

TEST_CASE("device segments: an optimizer's update in place joins the step's run unless its variable is read outside",
          "[function][cuda_graphs]") {
  const Shape s{4};
  Variable w(ops::zeros(s)), m(ops::zeros(s)), assigned(ops::zeros(s));
  // x -> read w -> mul -> exp (the "gradient") -> update {w, m} -> read w -> add: node indices in the comments.
  auto step = [&](GpuBuilder& b, const std::vector<Variable>& updated) {
    const int x = b.input(s);
    const int r = b.read(w);                        // 0
    const int y = b.op(OpId::mul, {x, r}, s);       // 1
    const int g = b.op(OpId::exp, {y}, s);          // 2
    graph::Node u;                                  // 3
    u.kind = graph::NodeKind::UpdateVariables;
    u.name = "update";
    u.op = OpId::add;
    u.inputs = {g};
    u.updates = updated;
    u.device = kGpu;
    b.g.nodes.push_back(std::move(u));
    const int after = b.read(w);                    // 4
    return std::make_pair(after, b.op(OpId::add, {after, y}, s));  // 5
  };
  SECTION("one run: forward, gradient, update and what follows") {
    GpuBuilder b;
    b.g.outputs = {step(b, {w, m}).second};
    const std::vector<SegmentPlan> plans = graph::plan_device_segments(b.g);
    REQUIRE(plans.size() == 1);
    CHECK(nodes_of(plans[0]) == std::vector<int>{0, 1, 2, 3, 4, 5});
    CHECK(plans[0].updates == std::vector<int>{3});
    CHECK(plans[0].variables == std::vector<int>{0, 4});
    // Left out by the caller (its variable moved between calls), the update splits the run (the read and add after
    // it are one op, too few for a graph).
    const std::vector<SegmentPlan> out = graph::plan_device_segments(b.g, {3});
    REQUIRE(out.size() == 1);
    CHECK(nodes_of(out[0]) == std::vector<int>{0, 1, 2});
    CHECK(out[0].updates.empty());
  }
  SECTION("a variable read outside the update's run keeps the update out") {
    GpuBuilder b;
    const auto [after, out] = step(b, {w, m});
    b.g.outputs = {out, after};  // w's value after the update, returned: its read leaves the run
    const std::vector<SegmentPlan> plans = graph::plan_device_segments(b.g);
    for (const SegmentPlan& p : plans) CHECK(p.updates.empty());
    REQUIRE(!plans.empty());
    CHECK(nodes_of(plans[0]) == std::vector<int>{0, 1, 2});
  }
  SECTION("an update of a variable the graph assigns stays out") {
    GpuBuilder b;
    const int out = step(b, {w, assigned}).second;
    b.assign(assigned, out);
    b.g.outputs = {out};
    const std::vector<SegmentPlan> plans = graph::plan_device_segments(b.g);
    for (const SegmentPlan& p : plans) CHECK(p.updates.empty());
  }
}

TEST_CASE("device graphs can be switched off for the process", "[function][cuda_graphs]") {
  const bool was = graph::device_graphs_enabled();
  graph::set_device_graphs_enabled(false);
  CHECK_FALSE(graph::device_graphs_enabled());
  graph::set_device_graphs_enabled(true);
  CHECK(graph::device_graphs_enabled());
  graph::set_device_graphs_enabled(was);
  // On the CPU a function has no segments, and its stats stay empty.
  auto f = ember::function([](const Tensor& x) { return ops::exp(ops::tanh(x)); });
  const Tensor x = ops::ones({3});
  for (int i = 0; i < 3; ++i) f(x);
  const graph::DeviceGraphStats st = f.concrete_functions().at(0)->device_graph_stats();
  CHECK(st.segments == 0);
  CHECK(st.launches == 0);
}

namespace {
void count_op(const OpRecord&) {}
}  // namespace

TEST_CASE("a gradient tape leaves device graphs on once it stops; a hook that needs every op turns them off",
          "[function][cuda_graphs]") {
  {
    GradientTape tape;  // installs the tape's hook for good
    const Tensor x = ops::ones({2});
    tape.watch(x);
    tape.gradient(ops::reduce_sum(x * x), {x});
  }
  CHECK_FALSE(ember::detail::has_op_hooks());
  const int id = add_op_hook(&count_op);
  CHECK(ember::detail::has_op_hooks());
  remove_op_hook(id);
  CHECK_FALSE(ember::detail::has_op_hooks());
}

// ------------------------------------------------------------------------------------------------ [cuda]

namespace {

bool have_gpu() {
  if (device_count(DeviceType::CUDA) > 0) return true;
  WARN("no CUDA device (device_count(DeviceType::CUDA) == 0): skipped");
  return false;
}

struct GraphsScope {
  bool was = graph::device_graphs_enabled();
  explicit GraphsScope(bool on) { graph::set_device_graphs_enabled(on); }
  ~GraphsScope() { graph::set_device_graphs_enabled(was); }
};

std::unique_ptr<Sequential> mlp() {
  random::set_seed(7);
  auto m = std::make_unique<Sequential>();
  m->add(layers::Input({20}));
  m->add(layers::Dense(32, {.activation = "relu"}));
  m->add(layers::Dense(10));
  return m;
}

struct Batch {
  Tensor x, y;
};
Batch batch(uint64_t seed) {
  DeviceScope cpu(Device::cpu());
  std::vector<int32_t> y(16);
  for (size_t i = 0; i < y.size(); ++i) y[i] = static_cast<int32_t>((i * 7 + seed) % 10);
  return {random::uniform({16, 20}, {.seed = seed}).to(kGpu), Tensor::from_vector(y, {16}).to(kGpu)};
}

// One Adam step as a function of (x, y): the loss, the update a host call of the graph.
struct Stepper {
  std::unique_ptr<Sequential> model = mlp();
  optimizers::Adam opt{{.learning_rate = 1e-2}};
  losses::SparseCategoricalCrossentropy loss{{.from_logits = true}};
  Tensor step(const Tensor& x, const Tensor& y) {
    GradientTape tape;
    Tensor l = loss(y, (*model)(x, /*training=*/true));
    std::vector<Variable> vars = model->trainable_weights();
    opt.apply(tape.gradient(l, vars), vars);
    return l;
  }
};

void check_same_weights(Sequential& a, Sequential& b) {
  std::vector<Tensor> wa = a.get_weights(), wb = b.get_weights();
  REQUIRE(wa.size() == wb.size());
  for (size_t i = 0; i < wa.size(); ++i) CHECK(same_bits(wa[i], wb[i]));
}

}  // namespace

TEST_CASE("a captured MLP Adam step gives eager's and plain replay's bits, call after call", "[cuda][cuda_graphs]") {
  if (!have_gpu()) return;
  DeviceScope on(kGpu);
  Stepper eager, plain, captured;
  auto plain_fn = ember::function([&](const Tensor& x, const Tensor& y) { return plain.step(x, y); });
  auto captured_fn = ember::function([&](const Tensor& x, const Tensor& y) { return captured.step(x, y); });
  for (uint64_t i = 0; i < 6; ++i) {
    INFO("call " << i);
    const Batch b = batch(i);
    const Tensor le = eager.step(b.x, b.y);
    Tensor lp, lc;
    {
      GraphsScope off(false);
      lp = plain_fn(b.x, b.y);
    }
    {
      GraphsScope graphs(true);
      lc = captured_fn(b.x, b.y);
    }
    CHECK(same_bits(le, lp));
    CHECK(same_bits(le, lc));
    check_same_weights(*eager.model, *captured.model);
  }
  const graph::DeviceGraphStats st = captured_fn.concrete_functions().at(0)->device_graph_stats();
  CHECK(st.segments >= 1);
  CHECK(st.failures == 0);
  CHECK(st.captures >= 1);
  CHECK(st.launches >= 4);  // calls 3 to 6 (the first traces, the second warms up)
  CHECK(plain_fn.concrete_functions().at(0)->device_graph_stats().launches == 0);
  // The whole step is one graph, the optimizer's update in place included (the iteration count, assigned on
  // every call, is read before it).
  const graph::Graph& g = captured_fn.concrete_functions().at(0)->graph();
  size_t updates = 0, captured_updates = 0;
  for (const graph::Node& n : g.nodes) updates += n.kind == graph::NodeKind::UpdateVariables ? 1 : 0;
  for (const SegmentPlan& p : graph::plan_device_segments(g)) captured_updates += p.updates.size();
  CHECK(updates >= 1);
  CHECK(captured_updates == updates);
  CHECK(st.segments == 1);
}

TEST_CASE("a captured step does not wait for the device", "[cuda][cuda_graphs]") {
  if (!have_gpu()) return;
#if !defined(NDEBUG)
  WARN("a debug build synchronises after every kernel launch: skipped");
  return;
#endif
  DeviceScope on(kGpu);
  GraphsScope graphs(true);
  Stepper s;
  auto f = ember::function([&](const Tensor& x, const Tensor& y) { return s.step(x, y); });
  const Batch b = batch(1);
  for (int i = 0; i < 3; ++i) f(b.x, b.y);
  const int64_t syncs = allocator_for(kGpu).host_synchronizations();
  for (int i = 0; i < 5; ++i) f(b.x, b.y);
  CHECK(allocator_for(kGpu).host_synchronizations() == syncs);
  CHECK(f.concrete_functions().at(0)->device_graph_stats().launches >= 5);
}

TEST_CASE("captured graphs fall back where they cannot hold, with eager's bits", "[cuda][cuda_graphs]") {
  if (!have_gpu()) return;
  DeviceScope on(kGpu);
  GraphsScope graphs(true);
  SECTION("a variable given a new buffer between calls is captured again, then read outside") {
    Variable v(random::normal({8}, {.seed = 1}));
    auto f = ember::function([&](const Tensor& x) { return ops::tanh(ops::exp(x * v.read_value()) + 1.0f); });
    const Tensor x = random::normal({8}, {.seed = 2});
    for (int i = 0; i < 8; ++i) {
      INFO("call " << i);
      v.assign(random::normal({8}, {.seed = static_cast<uint64_t>(10 + i)}));  // a new buffer every call
      const Tensor expected = ops::tanh(ops::exp(x * v.read_value()) + 1.0f);
      CHECK(same_bits(f(x), expected));
    }
    CHECK(f.concrete_functions().at(0)->device_graph_stats().failures == 0);
  }
  SECTION("random ops and prints split the step; each call draws anew") {
    random::set_seed(5);
    auto f = ember::function([](const Tensor& x) {
      Tensor a = ops::exp(ops::tanh(x));
      ops::print("a:", a);
      Tensor r = random::uniform({8});
      return ops::sqrt(ops::abs(a * r)) + 1.0f;
    });
    const Tensor x = random::normal({8}, {.seed = 2});
    std::vector<Tensor> outs;
    for (int i = 0; i < 5; ++i) outs.push_back(f(x));
    CHECK_FALSE(same_bits(outs[3], outs[4]));
    random::set_seed(5);
    GraphsScope off(false);
    auto g = ember::function([](const Tensor& x) {
      Tensor a = ops::exp(ops::tanh(x));
      Tensor r = random::uniform({8});
      return ops::sqrt(ops::abs(a * r)) + 1.0f;
    });
    for (int i = 0; i < 5; ++i) CHECK(same_bits(g(x), outs[static_cast<size_t>(i)]));
  }
  SECTION("a returned tensor kept by the caller is not overwritten by the next call") {
    auto f = ember::function([](const Tensor& x) { return ops::exp(ops::tanh(x)) * 3.0f; });
    std::vector<Tensor> xs, outs;
    for (int i = 0; i < 6; ++i) {
      xs.push_back(random::normal({8}, {.seed = static_cast<uint64_t>(i)}));
      outs.push_back(f(xs.back()));
    }
    for (size_t i = 0; i < xs.size(); ++i) CHECK(same_bits(outs[i], ops::exp(ops::tanh(xs[i])) * 3.0f));
    CHECK(f.concrete_functions().at(0)->device_graph_stats().launches >= 3);
  }
  SECTION("a bad index inside a captured graph is still reported, naming the op") {
    const Tensor params = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {4}).to(kGpu);
    auto f = ember::function([&](const Tensor& i) { return ops::exp(ops::gather(params, i)) + 1.0f; });
    const Tensor good = Tensor::from_vector(std::vector<int64_t>{3, 0}, {2}).to(kGpu);
    for (int i = 0; i < 3; ++i) f(good).to(Device::cpu());
    REQUIRE(f.concrete_functions().at(0)->device_graph_stats().launches >= 1);
    const Tensor bad = Tensor::from_vector(std::vector<int64_t>{1, 9}, {2}).to(kGpu);
    CHECK_THROWS_WITH(f(bad).to(Device::cpu()), Catch::Contains("gather") && Catch::Contains("[0, 4)"));
    CHECK(same_bits(f(good), ops::exp(ops::gather(params, good)) + 1.0f));
  }
}

TEST_CASE("fit's compiled steps on the GPU launch CUDA graphs, with the History of steps run op by op",
          "[cuda][cuda_graphs]") {
  if (!have_gpu()) return;
  DeviceScope on(kGpu);
  auto train = [](bool graphs) {
    GraphsScope scope(graphs);
    auto m = mlp();
    m->compile({.optimizer = optimizers::Adam({.learning_rate = 1e-2}),
                .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                .metrics = {"accuracy"}});
    Tensor x, y;
    {
      DeviceScope cpu(Device::cpu());  // the data stays on the host, as a dataset's does
      x = random::uniform({96, 20}, {.seed = 3});
      std::vector<int32_t> labels(96);
      for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int32_t>((i * 7) % 10);
      y = Tensor::from_vector(labels, {96});
    }
    random::set_seed(99);
    return m->fit(x, y, {.batch_size = 16, .epochs = 2, .verbose = 0, .shuffle = false});
  };
  const History plain = train(false);
  const int64_t before = graph::device_graph_totals().launches;
  const History captured = train(true);
  CHECK(graph::device_graph_totals().launches - before >= 6);
  for (const auto& [name, values] : plain.history) {
    INFO(name);
    CHECK(captured.history.at(name) == values);
  }
}
