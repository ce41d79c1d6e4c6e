// Conv2D training throughput on the CPU, against the GEMM ceiling measured in the same run.
// (1) The seed's CNN, Conv2D(32, 3, relu) -> GlobalAveragePooling2D -> Dense(10) on 28x28x1, batch 128:
//     one training step's forward + backward (GradientTape over the layer calls, gradients of a softmax
//     cross-entropy w.r.t. the trainable weights) as images/s, and its conv FLOPs over the step's time as
//     GFLOP/s. (2) A 32x32x64 -> 64 3x3 'same' Conv2D at batch 128: forward + backward (input, kernel and
//     bias gradients) GFLOP/s, and forward alone.
// References: the float32 GFLOP/s of ops::matmul 1024x1024x1024 and of each conv's own im2col GEMM shape
// (M = N*Ho*Wo, K = kh*kw*Cin, N = Cout), so speedup = conv GFLOP/s / GEMM GFLOP/s, how close conv gets to
// the GEMM ceiling. FLOPs: forward 2*N*Ho*Wo*Cout*kh*kw*Cin, backward twice that.
// (3) The Keras example CNN's two Conv2D(relu) layers at batch 128, forward: as one op (ops::conv2d_bias_relu,
//     what the layer runs) against ops::conv2d_bias followed by ops::relu, in ms.
// Usage: bench_conv [--json]   (2 intra-op threads)
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "framework/ember.h"

using namespace ember;

namespace {

using namespace ember::bench;

constexpr int kThreads = 2;
constexpr int64_t kBatch = 128;

double conv_forward_flops(int64_t n, int64_t ho, int64_t wo, int64_t cout, int64_t kh, int64_t kw, int64_t cin) {
  return 2.0 * n * ho * wo * cout * kh * kw * cin;
}

// Best seconds per call over a few rounds of `reps` calls, after a warm-up call (primitive creation).
template <class F>
double seconds_per_call(int rounds, int reps, F&& fn) {
  fn();
  double best = 1e300;
  for (int r = 0; r < rounds; ++r) best = std::min(best, best_seconds(1, [&] { for (int i = 0; i < reps; ++i) fn(); }) / reps);
  return best;
}

// GFLOP/s of ops::matmul for an (m x k) @ (k x n) float32 product.
double gemm_gflops(int64_t m, int64_t k, int64_t n) {
  Tensor a = random::uniform({m, k}, {.seed = 1}), b = random::uniform({k, n}, {.seed = 2});
  const double flops = 2.0 * m * k * n;
  const int reps = std::max(1, static_cast<int>(2e9 / flops));
  return flops / seconds_per_call(5, reps, [&] { keep_alive(ops::matmul(a, b).raw_data()); }) / 1e9;
}

std::vector<Tensor> as_tensors(const std::vector<Variable>& vs) { return {vs.begin(), vs.end()}; }

// (1) The seed's model, one training step's gradients.
struct SeedCnn {
  layers::Conv2D conv{32, 3, {.activation = "relu"}};
  layers::GlobalAveragePooling2D pool;
  layers::Dense dense{10};
  Tensor x = random::uniform({kBatch, 28, 28, 1}, {.seed = 3});
  Tensor labels = ops::one_hot(ops::cast(random::uniform({kBatch}, {.maxval = 10, .seed = 4}), DType::Int64), 10);
  std::vector<Tensor> weights;

  SeedCnn() {
    dense(pool(conv(x)));  // build
    for (Layer* l : std::initializer_list<Layer*>{&conv, &pool, &dense})
      for (const Variable& v : l->trainable_weights()) weights.push_back(v);
  }
  void step() {
    GradientTape tape;
    Tensor logits = dense(pool(conv(x, true), true), true);
    Tensor loss = ops::reduce_mean(-ops::reduce_sum(labels * ops::log_softmax(logits), -1));
    for (const Tensor& g : tape.gradient(loss, weights)) keep_alive(g.raw_data());
  }
};

// (2) One 3x3 'same' Conv2D layer inside a network: gradients for its input and weights.
struct MidConv {
  layers::Conv2D conv{64, 3, {.padding = "same"}};
  Tensor x = random::uniform({kBatch, 32, 32, 64}, {.seed = 5});
  Tensor dy = random::uniform({kBatch, 32, 32, 64}, {.seed = 6});
  std::vector<Tensor> sources;

  MidConv() {
    conv(x);
    sources = as_tensors(conv.trainable_weights());
    sources.insert(sources.begin(), x);
  }
  void forward() { keep_alive(conv(x).raw_data()); }
  void step() {
    GradientTape tape;
    tape.watch(x);
    Tensor y = conv(x, true);
    for (const Tensor& g : tape.gradient(y, sources, {.output_gradients = {dy}})) keep_alive(g.raw_data());
  }
};

}  // namespace

int main(int argc, char** argv) {
  const bool json = json_requested(argc, argv);
  config::set_intra_op_parallelism_threads(kThreads);
  if (!json)
    std::printf("conv, %d intra-op thread(s), float32, batch %lld; references: ops::matmul GEMM GFLOP/s\n",
                config::get_intra_op_parallelism_threads(), static_cast<long long>(kBatch));

  const double gemm_1024 = gemm_gflops(1024, 1024, 1024);
  const std::string ref_1024 = "matmul_1024_gflops";

  // (1) Seed model: conv FLOPs only (the pooling and Dense are < 1% of them); the step time is the whole step's.
  SeedCnn seed;
  const double seed_fwd = conv_forward_flops(kBatch, 26, 26, 32, 3, 3, 1);
  const double seed_s = seconds_per_call(5, 20, [&] { seed.step(); });
  const double seed_gflops = 3 * seed_fwd / seed_s / 1e9;
  const double seed_im2col = gemm_gflops(kBatch * 26 * 26, 9, 32);
  // images/s beside the images/s the conv FLOPs would allow at the 1024 GEMM's rate.
  const double seed_ips = kBatch / seed_s, ceiling_ips = gemm_1024 * 1e9 / (3 * seed_fwd / kBatch);
  print({"conv_seed_cnn_train_step", "img/s", "at_gemm_1024_rate", seed_ips, ceiling_ips, seed_ips / ceiling_ips}, json);
  print({"conv_seed_cnn_gflops", "GFLOP/s", ref_1024, seed_gflops, gemm_1024, seed_gflops / gemm_1024}, json);
  print({"conv_seed_cnn_gflops", "GFLOP/s", "im2col_gemm_86528x9x32", seed_gflops, seed_im2col, seed_gflops / seed_im2col},
        json);

  // (2) 32x32x64 -> 64, 3x3 same.
  MidConv mid;
  const double mid_fwd = conv_forward_flops(kBatch, 32, 32, 64, 3, 3, 64);
  const double fwd_gflops = mid_fwd / seconds_per_call(3, 2, [&] { mid.forward(); }) / 1e9;
  const double step_gflops = 3 * mid_fwd / seconds_per_call(3, 1, [&] { mid.step(); }) / 1e9;
  // The im2col GEMM of this conv is (131072 x 576) @ (576 x 64); 16384 rows keep its rate at a sixth of the memory.
  const double mid_im2col = gemm_gflops(16384, 576, 64);
  print({"conv_32x32x64_fwd", "GFLOP/s", ref_1024, fwd_gflops, gemm_1024, fwd_gflops / gemm_1024}, json);
  print({"conv_32x32x64_fwd_bwd", "GFLOP/s", ref_1024, step_gflops, gemm_1024, step_gflops / gemm_1024}, json);
  print({"conv_32x32x64_fwd_bwd", "GFLOP/s", "im2col_gemm_16384x576x64", step_gflops, mid_im2col,
         step_gflops / mid_im2col},
        json);

  // (3) The fused relu against the separate pass over the output, on both convolutions of the Keras example CNN.
  auto fused_row = [&](const char* name, Shape input, Shape filters, uint64_t seed) {
    const int64_t out = filters[3];
    Tensor xs = random::uniform(input, {.minval = -1, .seed = seed});
    Tensor ks = random::uniform(filters, {.minval = -0.1, .maxval = 0.1, .seed = seed + 1});
    Tensor bs = random::uniform({out}, {.minval = -0.1, .maxval = 0.1, .seed = seed + 2});
    const double fused = 1e3 * seconds_per_call(5, 5, [&] { keep_alive(ops::conv2d_bias_relu(xs, ks, bs).raw_data()); });
    const double separate =
        1e3 * seconds_per_call(5, 5, [&] { keep_alive(ops::relu(ops::conv2d_bias(xs, ks, bs)).raw_data()); });
    print({name, "ms", "conv2d_bias_then_relu", fused, separate, separate / fused}, json);
  };
  fused_row("conv_bias_relu_28x28x1_32", {kBatch, 28, 28, 1}, {3, 3, 1, 32}, 7);
  fused_row("conv_bias_relu_13x13x32_64", {kBatch, 13, 13, 32}, {3, 3, 32, 64}, 10);
  return 0;
}
