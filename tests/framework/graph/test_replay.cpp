// A replay that calls its ops' kernels directly (resolved when the function was planned) while nothing observes
// ops: the same bits as the dispatched replay and as eager, whatever the variables hold and whichever graph a
// call picks; and hooks still see every op once one is installed.
#include <catch2/catch.hpp>

#include <atomic>

#include "framework/ember.h"
#include "tests/support/small_trainee.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using ember::testing::same_bits;

namespace {

std::atomic<int64_t> g_ops_seen{0};
void count_op(const OpRecord&) { g_ops_seen.fetch_add(1); }

// The MLP without dropout: eager and traced calls interleave, so they must not draw random numbers.
struct Trainee : ember::testing::SmallTrainee {
  Trainee() : SmallTrainee({.dropout = false}) {}
};

Tensor labels(int64_t batch) {
  std::vector<int32_t> y;
  for (int64_t i = 0; i < batch; ++i) y.push_back(static_cast<int32_t>(i % 3));
  return Tensor::from_vector<int32_t>(y);
}

void check_same_weights(Trainee& a, Trainee& b) {
  std::vector<Variable> wa = a.model->weights(), wb = b.model->weights();
  REQUIRE(wa.size() == wb.size());
  for (size_t i = 0; i < wa.size(); ++i) CHECK(same_bits(wa[i].value(), wb[i].value()));
}

}  // namespace

TEST_CASE("a replayed training step calls its kernels directly with eager's bits; an op hook sees every op",
          "[function][replay]") {
  Trainee eager, traced;
  auto step = ember::function([&](const Tensor& x, const Tensor& y) { return traced(x, y); });
  const Tensor x = random::uniform({8, 6}, {.seed = 3});
  const Tensor y = labels(8);
  for (int i = 0; i < 4; ++i) CHECK(same_bits(step(x, y), eager(x, y)));  // direct, after the trace
  check_same_weights(eager, traced);

  // A hook that needs every op makes the replay dispatch each op (through the hooks); the bits stay the same.
  const int64_t ops_before = g_ops_seen.load();
  const int hook = add_op_hook(&count_op);
  const Tensor hooked = step(x, y);
  remove_op_hook(hook);
  const int64_t seen = g_ops_seen.load() - ops_before;
  const graph::Graph& g = step.concrete_functions().at(0)->graph();
  const int64_t ops = static_cast<int64_t>(g.count(graph::NodeKind::UpdateVariables) + g.count(graph::NodeKind::Op));
  INFO(g);
  CHECK(seen >= ops);
  CHECK(same_bits(hooked, eager(x, y)));
  // Without it, direct again.
  const int64_t ops_after = g_ops_seen.load();
  CHECK(same_bits(step(x, y), eager(x, y)));
  CHECK(g_ops_seen.load() == ops_after);
  check_same_weights(eager, traced);
  CHECK(step.tracing_count() == 1);
}

TEST_CASE("a direct replay reads each call's variable values, a reassigned buffer included", "[function][replay]") {
  random::set_seed(2);
  Variable w(random::normal({5, 4})), b(random::normal({4}));
  auto body = [&](const Tensor& x) {
    return ops::reduce_sum(ops::relu(ops::matmul(x, w.read_value()) + b.read_value()) * 2.0f, {1});
  };
  auto f = ember::function(body);
  const Tensor x = random::uniform({3, 5}, {.seed = 4});
  CHECK(same_bits(f(x), body(x)));  // traces
  CHECK(same_bits(f(x), body(x)));
  // A new buffer for w, new values in b's own buffer (assign_add): the next replay reads both.
  w.assign(random::normal({5, 4}, {.seed = 8}));
  b.assign_add(random::normal({4}, {.seed = 9}));
  const Tensor expected = body(x);
  CHECK(same_bits(f(x), expected));
  // A value the caller keeps is not rewritten by later calls (a planned buffer is the replay's own).
  const Tensor kept = f(x);
  w.assign(random::normal({5, 4}, {.seed = 10}));
  CHECK(same_bits(f(x), body(x)));
  CHECK(same_bits(kept, expected));
  CHECK(f.tracing_count() == 1);
}

TEST_CASE("direct replays of retraced and reduce_retracing graphs each keep eager's bits", "[function][replay]") {
  for (const bool reduce_retracing : {false, true}) {
    INFO("reduce_retracing " << reduce_retracing);
    Trainee eager, traced;
    auto step = ember::function([&](const Tensor& x, const Tensor& y) { return traced(x, y); },
                                {.reduce_retracing = reduce_retracing});
    for (int64_t batch : {4, 7, 4, 9, 7, 4}) {
      INFO("batch " << batch);
      const Tensor x = random::uniform({batch, 6}, {.seed = static_cast<uint64_t>(batch)});
      const Tensor y = labels(batch);
      CHECK(same_bits(step(x, y), eager(x, y)));
      check_same_weights(eager, traced);
    }
    // Without reduce_retracing each batch size traces; with it, the second size generalises the trace.
    CHECK(step.tracing_count() == (reduce_retracing ? 2 : 3));
  }
}
