// Autodiff costs. (1) Recording overhead: ns per op of a chain of 1-element adds under a watching
// GradientTape, beside the same chain with no tape (speedup = no_tape / taped, below 1 by the overhead).
// (2) Backward over forward: for a 784-256-256-10 MLP (matmul + bias + relu, softmax cross-entropy via
// log_softmax, batch 128, float32), seconds of tape.gradient over seconds of the untaped forward, beside
// the usual 2x target (speedup = 2 / ratio).
// Usage: bench_autodiff [--json]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <vector>

#include "bench/bench_util.h"
#include "framework/ember.h"

using namespace ember;

namespace {

using namespace ember::bench;

constexpr int kChain = 2000;

// Seconds of a chain of kChain 1-element adds, under a fresh watching tape when `taped`.
double chain_seconds(bool taped) {
  const Tensor one = Tensor::scalar<float>(1.0f);
  const Tensor x0 = Tensor::scalar<float>(0.0f);
  auto run = [&] {
    std::unique_ptr<GradientTape> tape;
    if (taped) {
      tape = std::make_unique<GradientTape>();
      tape->watch(x0);
    }
    Tensor x = x0;
    for (int i = 0; i < kChain; ++i) x = ops::add(x, one);
    keep_alive(x.raw_data());
  };
  run();
  return best_seconds(20, run);
}

struct Mlp {
  std::vector<Tensor> params;  // W1, b1, W2, b2, W3, b3
  Tensor x, labels;

  Mlp() {
    const int64_t sizes[] = {784, 256, 256, 10};
    random::set_seed(7);
    for (int l = 0; l < 3; ++l) {
      params.push_back(random::normal({sizes[l], sizes[l + 1]}, {.stddev = 0.05}));
      params.push_back(ops::zeros({sizes[l + 1]}));
    }
    x = random::uniform({128, 784});
    labels = ops::one_hot(ops::cast(random::uniform({128}, {.maxval = 10}), DType::Int64), 10);
  }

  Tensor loss() const {
    Tensor h = x;
    for (int l = 0; l < 3; ++l) {
      h = ops::matmul(h, params[2 * l]) + params[2 * l + 1];
      if (l < 2) h = ops::relu(h);
    }
    return ops::reduce_mean(-ops::reduce_sum(labels * ops::log_softmax(h), -1));
  }
};

}  // namespace

int main(int argc, char** argv) {
  const bool json = json_requested(argc, argv);
  if (!json)
    std::printf("autodiff, %d intra-op thread(s); chain of %d 1-element adds; MLP 784-256-256-10 batch 128 float32\n",
                config::get_intra_op_parallelism_threads(), kChain);

  const double plain_ns = chain_seconds(false) / kChain * 1e9;
  const double taped_ns = chain_seconds(true) / kChain * 1e9;
  print({"autodiff_record_overhead", "ns/op", "no_tape", taped_ns, plain_ns, plain_ns / taped_ns}, json);

  Mlp mlp;
  auto forward = [&] { keep_alive(mlp.loss().raw_data()); };
  forward();
  const double fwd = best_seconds(20, forward);
  // Backward alone: each rep records a forward (untimed) and times gradient().
  double bwd = 1e300;
  for (int r = 0; r < 21; ++r) {
    GradientTape tape;
    for (const Tensor& p : mlp.params) tape.watch(p);
    Tensor loss = mlp.loss();
    const auto t0 = Clock::now();
    std::vector<Tensor> g = tape.gradient(loss, mlp.params);
    keep_alive(g[0].raw_data());
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (r > 0) bwd = std::min(bwd, s);  // the first is a warm-up
  }
  const double ratio = bwd / fwd;
  if (!json) std::printf("MLP forward %.3f ms, backward %.3f ms\n", fwd * 1e3, bwd * 1e3);
  print({"autodiff_mlp_backward_over_forward", "ratio", "2x target", ratio, 2.0, 2.0 / ratio}, json);
  return 0;
}
