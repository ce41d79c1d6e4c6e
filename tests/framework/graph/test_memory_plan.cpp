// The compiler's memory passes and the static memory plan: what a replayed training step keeps alive at once and
// allocates, measured with the CPU allocator's statistics, and the values they leave bit for bit as eager's.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <optional>

#include "framework/ember.h"
#include "tests/support/small_trainee.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using ember::testing::same_bits;
using Trainee = ember::testing::SmallTrainee;

namespace {

// A Conv2D(relu) + MaxPooling2D block's gradients, as Keras's example CNN takes them; two of them with the same
// strides start from the same weights.
struct ConvPoolStep {
  Variable w, b;
  std::array<int64_t, 2> strides;

  explicit ConvPoolStep(std::array<int64_t, 2> s) : strides(s) {
    random::set_seed(7);
    w = Variable(random::normal({3, 3, 4, 32}));
    b = Variable(random::normal({32}));
  }

  std::vector<Tensor> operator()(const Tensor& x) {
    GradientTape tape;
    Tensor y = ops::max_pool2d(ops::conv2d_bias_relu(x, w.read_value(), b.read_value()), {2, 2}, {.strides = strides});
    Tensor loss = ops::reduce_sum(y * y);
    return tape.gradient(loss, std::vector<Variable>{w, b});
  }
};

// CPU allocations made by `call` (under a tape, when `unplanned`, which turns the memory plan off: it may keep
// the values).
template <class F>
int64_t allocations_of(F&& call, bool unplanned = false) {
  std::optional<GradientTape> tape;
  if (unplanned) tape.emplace(TapeOptions{.watch_accessed_variables = false});
  const int64_t before = config::memory_info(Device::cpu()).allocation_count;
  call();
  return config::memory_info(Device::cpu()).allocation_count - before;
}

size_t count_pool_grads(const graph::Graph& g, bool in_place) {
  size_t n = 0;
  for (const graph::Node& node : g.nodes)
    n += node.kind == graph::NodeKind::Op && node.op == OpId::max_pool2d_grad && (node.in_place_input == 0) == in_place;
  return n;
}

}  // namespace

TEST_CASE("a conv-relu-pool backward lets the convolution's output go at the pooling gradient", "[function][memory]") {
  const Tensor x = random::uniform({16, 32, 32, 4}, {.seed = 3});
  const int64_t activation = 16 * 30 * 30 * 32 * 4;  // bytes of the convolution's output (and of its gradient)
  ConvPoolStep eager_step({2, 2});
  const std::vector<Tensor> expected = eager_step(x);
  ConvPoolStep traced({2, 2});
  auto f = ember::function([&traced](const Tensor& in) { return traced(in); });
  std::vector<Tensor> got = f(x);
  REQUIRE(got.size() == 2);
  CHECK(same_bits(got[0], expected[0]));
  CHECK(same_bits(got[1], expected[1]));

  const graph::Graph& g = f.concrete_functions()[0]->graph();
  CHECK(count_pool_grads(g, /*in_place=*/true) == 1);  // the gradient overwrites the convolution's output
  // relu_grad now reads the pooled gradient, so it runs ahead of the pooling gradient.
  for (size_t k = 0; k < g.nodes.size(); ++k)
    if (g.nodes[k].kind == graph::NodeKind::Op && g.nodes[k].op == OpId::max_pool2d_grad) {
      const int r = g.nodes[k].inputs[2];
      const int producer = g.values[static_cast<size_t>(r)].producer;
      REQUIRE(producer >= 0);
      CHECK(g.nodes[static_cast<size_t>(producer)].op == OpId::relu_grad);
    }

  // Never the output and its gradient at once: eagerly (and without the passes: 2.5 activations) the pooling
  // gradient writes a second activation-sized buffer while the output waits for relu_grad. Now: the output,
  // and the pooled output, its gradient and relu_grad's (a quarter each).
  const Device cpu = Device::cpu();
  const int64_t before = config::memory_info(cpu).bytes_in_use;
  config::reset_memory_stats(cpu);
  got = f(x);
  const int64_t transient = config::memory_info(cpu).peak_bytes - before;
  CHECK(transient < 2 * activation);
  CHECK(same_bits(got[0], expected[0]));
  CHECK(same_bits(got[1], expected[1]));
}

TEST_CASE("overlapping pooling windows keep their gradient's own buffer, with eager's values", "[function][memory]") {
  const Tensor x = random::uniform({4, 12, 12, 4}, {.seed = 4});
  ConvPoolStep eager_step({1, 1});
  const std::vector<Tensor> expected = eager_step(x);
  ConvPoolStep traced({1, 1});
  auto f = ember::function([&traced](const Tensor& in) { return traced(in); });
  for (int call = 0; call < 2; ++call) {
    std::vector<Tensor> got = f(x);
    CHECK(same_bits(got[0], expected[0]));
    CHECK(same_bits(got[1], expected[1]));
  }
  const graph::Graph& g = f.concrete_functions()[0]->graph();
  CHECK(count_pool_grads(g, /*in_place=*/false) == 1);
  CHECK(count_pool_grads(g, /*in_place=*/true) == 0);
}

TEST_CASE("a tape around a replayed conv-relu-pool step gets eager's second-order values", "[function][memory]") {
  const Tensor x = random::uniform({2, 8, 8, 4}, {.seed = 5});
  auto grad_norm = [](ConvPoolStep& step, const std::function<std::vector<Tensor>(const Tensor&)>& run,
                      const Tensor& in) {
    GradientTape outer;
    std::vector<Tensor> grads = run(in);
    Tensor norm = ops::reduce_sum(grads[0] * grads[0]);
    return outer.gradient(norm, std::vector<Variable>{step.b})[0];
  };
  ConvPoolStep eager_step({2, 2});
  const Tensor expected = grad_norm(eager_step, [&](const Tensor& in) { return eager_step(in); }, x);
  ConvPoolStep traced({2, 2});
  auto f = ember::function([&traced](const Tensor& in) { return traced(in); });
  const Tensor got = grad_norm(traced, [&](const Tensor& in) { return f(in); }, x);
  CHECK(ops::reduce_max(ops::abs(got - expected)).item<float>() <= 1e-4f * (1 + ops::reduce_max(ops::abs(expected)).item<float>()));
}

TEST_CASE("a replayed training step writes its planned values into an arena, with eager's bits", "[function][memory]") {
  for (const bool cnn : {false, true}) {
    INFO((cnn ? "cnn" : "mlp"));
    Trainee eager({.cnn = cnn}), traced({.cnn = cnn});
    auto eager_step = [&](const Tensor& x, const Tensor& y) { return eager(x, y); };
    auto traced_step = ember::function([&](const Tensor& x, const Tensor& y) { return traced(x, y); });
    const Tensor x = random::uniform(cnn ? Shape{8, 8, 8, 2} : Shape{8, 6}, {.seed = 21});
    const Tensor y = Tensor::from_vector<int32_t>({0, 1, 2, 0, 1, 2, 0, 1});
    std::vector<Tensor> eager_losses, traced_losses;
    random::set_seed(5);
    for (int i = 0; i < 12; ++i) eager_losses.push_back(eager_step(x, y));
    random::set_seed(5);
    for (int i = 0; i < 12; ++i) traced_losses.push_back(traced_step(x, y));
    for (size_t i = 0; i < eager_losses.size(); ++i) CHECK(same_bits(traced_losses[i], eager_losses[i]));
    std::vector<Variable> a = eager.model->weights(), b = traced.model->weights();
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) CHECK(same_bits(a[i].value(), b[i].value()));

    const graph::MemoryPlanStats stats = traced_step.concrete_functions()[0]->memory_plan_stats();
    CHECK(stats.planned_values >= 8);
    CHECK(stats.arena_bytes < stats.naive_bytes);  // places are reused
    // Each planned value is one allocation fewer per call than without the plan; then the step goes on with
    // eager's bits.
    random::set_seed(9);
    const int64_t planned = allocations_of([&] { traced_step(x, y); });
    const int64_t unplanned = allocations_of([&] { traced_step(x, y); }, /*unplanned=*/true);
    INFO(planned << " allocations per call, " << unplanned << " without the plan");
    CHECK(unplanned - planned >= stats.planned_values);
    random::set_seed(9);
    eager_step(x, y);
    eager_step(x, y);
    for (size_t i = 0; i < a.size(); ++i) CHECK(same_bits(a[i].value(), b[i].value()));
  }
}

TEST_CASE("values a replay returns, assigns or views are its caller's, never rewritten by the next call",
          "[function][memory]") {
  random::set_seed(3);
  const Tensor w = random::normal({6, 5});
  Variable kept(ops::zeros({4, 5}));
  auto body = [&](const Tensor& x) {
    Tensor h = ops::relu(ops::matmul(x, w));    // planned: read only inside the call
    Tensor r = ops::reshape(h * 2.0f, {5, 4});  // a view of a planned buffer, returned: not planned
    Tensor s = ops::exp(ops::neg(h));           // neg's output taken over by exp (in place)
    kept.assign(ops::tanh(h + 1.0f));           // assigned: not planned
    Tensor u = ops::reduce_sum(s * ops::sigmoid(h), {1});
    return std::vector<Tensor>{r, u, ops::transpose(r, {1, 0})};
  };
  auto f = ember::function(body);
  const Tensor x0 = random::uniform({4, 6}, {.seed = 1}), x1 = random::uniform({4, 6}, {.seed = 2});
  const std::vector<Tensor> e0 = body(x0);
  const Tensor e0_kept = kept.value().clone();
  const std::vector<Tensor> e1 = body(x1);
  const Tensor e1_kept = kept.value().clone();
  f(x1);  // traces
  for (int call = 0; call < 3; ++call) {
    const std::vector<Tensor> got0 = f(x0);
    const Tensor kept0 = kept.value();
    const std::vector<Tensor> got1 = f(x1);
    for (size_t i = 0; i < e0.size(); ++i) {
      CHECK(same_bits(got0[i], e0[i]));
      CHECK(same_bits(got1[i], e1[i]));
    }
    CHECK(same_bits(kept0, e0_kept));
    CHECK(same_bits(kept.value(), e1_kept));
  }
  const graph::MemoryPlanStats stats = f.concrete_functions()[0]->memory_plan_stats();
  CHECK(stats.planned_values >= 2);
  CHECK(stats.arena_bytes <= stats.naive_bytes);
}

TEST_CASE("a replay under an outer tape allocates its values, for the tape, with eager's gradients",
          "[function][memory]") {
  random::set_seed(4);
  Variable w(random::normal({6, 5})), v(random::normal({5, 3}));
  auto body = [&](const Tensor& x) {
    Tensor h = ops::relu(ops::matmul(x, w.read_value()));
    Tensor z = ops::sigmoid(ops::matmul(h * h, v.read_value()));
    return ops::reduce_sum(z * z);
  };
  auto f = ember::function(body);
  const Tensor x = random::uniform({4, 6}, {.seed = 8});
  auto grads_of = [&](const std::function<Tensor(const Tensor&)>& run) {
    GradientTape tape;
    Tensor loss = run(x);
    return tape.gradient(loss, std::vector<Variable>{w, v});
  };
  const std::vector<Tensor> expected = grads_of(body);
  auto close = [](const Tensor& a, const Tensor& b) {
    return ops::reduce_max(ops::abs(a - b)).item<float>() <= 1e-5f * (1 + ops::reduce_max(ops::abs(b)).item<float>());
  };
  f(x);  // traces
  const std::vector<Tensor> first = grads_of([&](const Tensor& in) { return f(in); });
  CHECK(close(first[0], expected[0]));
  CHECK(close(first[1], expected[1]));
  for (int call = 0; call < 3; ++call) {
    f(x);  // a replay with the plan between the taped ones
    const std::vector<Tensor> got = grads_of([&](const Tensor& in) { return f(in); });
    CHECK(same_bits(got[0], first[0]));
    CHECK(same_bits(got[1], first[1]));
  }
  CHECK(f.concrete_functions()[0]->memory_plan_stats().planned_values > 0);
}

TEST_CASE("the memory plan never gives two buffers alive at once the same bytes", "[function][memory]") {
  for (const bool cnn : {false, true}) {
    INFO((cnn ? "cnn" : "mlp"));
    Trainee traced({.cnn = cnn});
    auto step = ember::function([&](const Tensor& x, const Tensor& y) { return traced(x, y); });
    const Tensor y = Tensor::from_vector<int32_t>({0, 1, 2, 0, 1, 2, 0, 1});
    step(random::uniform(cnn ? Shape{8, 8, 8, 2} : Shape{8, 6}), y);
    const graph::Graph& g = step.concrete_functions()[0]->graph();
    const graph::MemoryPlan plan = graph::plan_memory(g);
    graph::BufferGroups groups = graph::buffer_groups(g);
    struct Placed {
      int arena;
      int64_t begin, end;  // bytes
      int first, last;     // nodes
    };
    std::vector<Placed> placed;
    for (size_t v = 0; v < g.values.size(); ++v) {
      const graph::MemoryPlan::Slot& slot = plan.slots[v];
      if (slot.arena < 0) continue;
      const graph::Value& val = g.values[v];
      REQUIRE(val.producer >= 0);
      CHECK(g.nodes[static_cast<size_t>(val.producer)].kind == graph::NodeKind::Op);
      CHECK(std::find(g.outputs.begin(), g.outputs.end(), static_cast<int>(v)) == g.outputs.end());
      const int64_t size = static_cast<int64_t>(dtype_size(val.dtype));
      const int64_t begin = slot.element * size;
      CHECK(begin % 64 == 0);
      const int64_t end = begin + val.shape.num_elements() * size;
      CHECK(end <= plan.arenas[static_cast<size_t>(slot.arena)].elements * size);
      const int last = std::max(val.producer, groups.last_use[static_cast<size_t>(groups.find(static_cast<int>(v)))]);
      placed.push_back({slot.arena, begin, end, val.producer, last});
    }
    CHECK(static_cast<int>(placed.size()) == plan.stats.planned_values);
    CHECK(plan.stats.arena_bytes <= plan.stats.naive_bytes);
    for (size_t i = 0; i < placed.size(); ++i)
      for (size_t j = i + 1; j < placed.size(); ++j) {
        const Placed &a = placed[i], &b = placed[j];
        if (a.arena != b.arena || a.last < b.first || b.last < a.first) continue;
        CHECK((a.end <= b.begin || b.end <= a.begin));
      }
  }
}

TEST_CASE("a function with an unknown batch dimension plans the graph of each batch size", "[function][memory]") {
  random::set_seed(6);
  const Tensor w = random::normal({6, 5});
  auto body = [&](const Tensor& x) { return ops::reduce_sum(ops::sigmoid(ops::relu(ops::matmul(x, w)) * 3.0f), {1}); };
  auto f = ember::function(body, {.unknown_batch_dimension = true});
  for (int64_t batch : {4, 7, 4, 9, 7}) {
    INFO("batch " << batch);
    const Tensor x = random::uniform({batch, 6}, {.seed = static_cast<uint64_t>(batch)});
    const Tensor first = f(x);
    CHECK(same_bits(f(x), body(x)));
    CHECK(same_bits(first, body(x)));
  }
  CHECK(f.tracing_count() == 1);
  for (const auto& cf : f.concrete_functions()) {
    INFO(cf->graph());
    CHECK(cf->memory_plan_stats().planned_values > 0);
  }
}
