// Layer training-step speed on the CPU, one training step each: forward under a GradientTape, the gradients of
// mean(y^2) with respect to the layer's weights, and an SGD update, in ms per step.
//   mha_train_ms:  MultiHeadAttention(8 heads, key_dim 64) as self-attention on (batch 8, sequence 256, 512
//                  features);
//   lstm_train_ms: LSTM(256) over (batch 64, 100 steps, 128 features), y its last output (the whole-sequence op);
//   lstm_per_step_train_ms: the same LSTM with unroll=True, which runs the cell step by step with framework ops;
//   lstm_masked_train_ms: the same LSTM with a right-padded mask, half the sequences at half length (the
//                  whole-sequence op with sequence lengths), against the per-step path on the same mask (unroll=True,
//                  masked steps skipped with framework ops) measured in the same run.
// Reference: the step's matmul FLOPs at the float32 rate of ops::matmul 1024x1024x1024 measured in the same run,
// so speedup = how close the step comes to that GEMM ceiling. bench/compare_pytorch_layers.py runs this program
// and measures torch.nn.MultiheadAttention and torch.nn.LSTM on the same steps, printing both.
// Usage: bench_layers [--json] [--profile-lstm DIR]   (2 intra-op threads; --profile-lstm also prints the
// profiler's top-ops table of a few LSTM steps and writes their trace under DIR)
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
constexpr int64_t kLstmBatch = 64, kLstmSteps = 100, kLstmFeatures = 128, kLstmUnits = 256;

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

// Matmul FLOPs of one LSTM forward: per step, the input and recurrent products of all four gates; the backward
// pass costs twice the forward.
double lstm_step_flops() {
  return 3.0 * 2.0 * kLstmBatch * kLstmSteps * (kLstmFeatures + kLstmUnits) * 4.0 * kLstmUnits;
}

// One SGD training step of mean(layer(x)^2).
template <class Call>
auto train_step(const std::vector<Variable>& vars, optimizers::SGD& sgd, Call&& call) {
  return [&vars, &sgd, call] {
    std::vector<Tensor> grads;
    {
      GradientTape tape;
      Tensor loss = ops::reduce_mean(ops::square(call()));
      grads = tape.gradient(loss, std::vector<Tensor>(vars.begin(), vars.end()));
    }
    sgd.apply(grads, vars);
    keep_alive(vars[0].value().raw_data());
  };
}

std::string flag_value(int argc, char** argv, const std::string& flag) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == flag) return argv[i + 1];
  return "";
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
  const double step = seconds_per_call(3, 3, train_step(vars, sgd, [&] { return mha({x, x}, true); }));
  // The reference: the step's matmul FLOPs at ops::matmul's 1024^3 rate (speedup < 1: time spent beyond them).
  const double bound = mha_step_flops() / (gemm * 1e9);
  print({"mha_train_ms", "ms", "matmul_bound_ms", step * 1e3, bound * 1e3, bound / step}, json);

  layers::LSTM lstm(kLstmUnits);
  const Tensor seq = random::uniform({kLstmBatch, kLstmSteps, kLstmFeatures}, {.minval = -1, .maxval = 1, .seed = 4});
  lstm(seq);  // builds
  const std::vector<Variable> lstm_vars = lstm.trainable_weights();
  optimizers::SGD lstm_sgd({.learning_rate = 0.01});  // an optimizer is built for one set of variables
  auto lstm_step = train_step(lstm_vars, lstm_sgd, [&] { return lstm(seq, true); });
  const double lstm_s = seconds_per_call(3, 2, lstm_step);
  const double lstm_bound = lstm_step_flops() / (gemm * 1e9);
  print({"lstm_train_ms", "ms", "matmul_bound_ms", lstm_s * 1e3, lstm_bound * 1e3, lstm_bound / lstm_s}, json);

  layers::LSTM per_step(kLstmUnits, {.unroll = true});
  per_step(seq);
  per_step.set_weights(lstm.get_weights());
  const std::vector<Variable> per_step_vars = per_step.trainable_weights();
  optimizers::SGD per_step_sgd({.learning_rate = 0.01});
  const double per_step_s = seconds_per_call(3, 2, train_step(per_step_vars, per_step_sgd, [&] { return per_step(seq, true); }));
  print({"lstm_per_step_train_ms", "ms", "matmul_bound_ms", per_step_s * 1e3, lstm_bound * 1e3, lstm_bound / per_step_s},
        json);

  // A right-padded mask: the second half of the batch at half length, as Embedding(mask_zero) gives padded text.
  std::vector<float> mask_values;
  for (int64_t b = 0; b < kLstmBatch; ++b)
    for (int64_t t = 0; t < kLstmSteps; ++t) mask_values.push_back(b < kLstmBatch / 2 || t < kLstmSteps / 2 ? 1 : 0);
  const Tensor mask = ops::cast(Tensor::from_vector<float>(mask_values, {kLstmBatch, kLstmSteps}), DType::Bool);
  auto masked = [&](layers::LSTM& l) { return l.call_masked({seq}, {mask}, true).at(0); };
  const double masked_s = seconds_per_call(3, 2, train_step(lstm_vars, lstm_sgd, [&] { return masked(lstm); }));
  const double masked_per_step_s =
      seconds_per_call(2, 1, train_step(per_step_vars, per_step_sgd, [&] { return masked(per_step); }));
  print({"lstm_masked_train_ms", "ms", "masked_per_step_ms", masked_s * 1e3, masked_per_step_s * 1e3,
         masked_per_step_s / masked_s},
        json);

  if (const std::string dir = flag_value(argc, argv, "--profile-lstm"); !dir.empty()) {
    profiler::Profile p(dir, {.summary_rows = 25});
    for (int i = 0; i < 3; ++i) lstm_step();
  }
  return 0;
}
