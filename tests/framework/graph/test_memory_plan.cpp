// The compiler's memory passes: what a replayed training step keeps alive at once, measured with the CPU
// allocator's statistics, and the gradients they leave bit for bit as eager's.
#include <catch2/catch.hpp>

#include <cstring>

#include "framework/ember.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using ember::testing::same_bits;

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
