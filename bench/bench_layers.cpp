// Layer training-step speed on the CPU. MultiHeadAttention(8 heads, key_dim 64) as self-attention on (batch 8,
// sequence 256, 512 features): one training step, forward under a GradientTape, the gradients of mean(y^2) with
// respect to the eight weights, and an SGD update, in ms per step. Reference: the step's matmul FLOPs at the
// float32 rate of ops::matmul 1024x1024x1024 measured in the same run, so speedup = how close the step comes to
// that GEMM ceiling. bench/compare_pytorch_layers.py runs this program and measures
// torch.nn.MultiheadAttention on the same step, printing both.
// Usage: bench_layers [--json]   (2 intra-op threads)
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "framework/ember.h"

using namespace ember;
using namespace ember::bench;

namespace {

constexpr int kThreads = 2;
constexpr int64_t kBatch = 8, kSeq = 256, kWidth = 512, kHeads = 8;

template <class F>
double seconds_per_call(int rounds, int reps, F&& fn) {
  fn();
  double best = 1e300;
  for (int r = 0; r < rounds; ++r) best = std::min(best, best_seconds(1, [&] { for (int i = 0; i < reps; ++i) fn(); }) / reps);
  return best;
}

double gemm_gflops(int64_t n) {
  Tensor a = random::uniform({n, n}, {.seed = 1}), b = random::uniform({n, n}, {.seed = 2});
  const double flops = 2.0 * n * n * n;
  return flops / seconds_per_call(5, std::max(1, static_cast<int>(2e9 / flops)), [&] {
           keep_alive(ops::matmul(a, b).raw_data());
         }) / 1e9;
}

// Matmul FLOPs of one self-attention forward: four (width x width) projections and the two batched products
// over (seq x seq) scores; the backward pass costs twice the forward.
double mha_step_flops() {
  const double proj = 2.0 * kBatch * kSeq * kWidth * kWidth;
  const double attn = 2.0 * 2.0 * kBatch * kSeq * kSeq * kWidth;
  return 3.0 * (4.0 * proj + attn);
}

}  // namespace

int main(int argc, char** argv) {
  const bool json = json_requested(argc, argv);
  config::set_intra_op_parallelism_threads(kThreads);
  if (!json)
    std::printf("layers, %d intra-op thread(s), float32; reference: the step's FLOPs at ops::matmul 1024^3's rate\n",
                config::get_intra_op_parallelism_threads());
  const double gemm = gemm_gflops(1024);

  layers::MultiHeadAttention mha(kHeads, kWidth / kHeads);
  const Tensor x = random::uniform({kBatch, kSeq, kWidth}, {.minval = -1, .maxval = 1, .seed = 3});
  optimizers::SGD sgd({.learning_rate = 0.01});
  mha({x, x});  // builds
  const std::vector<Variable> vars = mha.trainable_weights();
  const double step = seconds_per_call(3, 3, [&] {
    std::vector<Tensor> grads;
    {
      GradientTape tape;
      Tensor loss = ops::reduce_mean(ops::square(mha({x, x}, true)));
      grads = tape.gradient(loss, std::vector<Tensor>(vars.begin(), vars.end()));
    }
    sgd.apply(grads, vars);
    keep_alive(vars[0].value().raw_data());
  });
  // The reference: the step's matmul FLOPs at ops::matmul's 1024^3 rate (speedup < 1: time spent beyond them).
  const double bound = mha_step_flops() / (gemm * 1e9);
  print({"mha_train_ms", "ms", "matmul_bound_ms", step * 1e3, bound * 1e3, bound / step}, json);
  return 0;
}
