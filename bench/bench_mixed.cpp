// Mixed precision on the CPU, each figure beside float32 measured in the same run (2 intra-op threads):
// - kernels: bfloat16 and float16 matmul and conv2d (forward and both gradients) on one shape of the
//   Fashion-MNIST CNN each, against the same op in float32; and, on a CPU with AVX512-BF16, one core's peak
//   bfloat16 dot-product rate (vdpbf16ps, what bfloat16 kernels without AMX compute with) against its peak float32
//   FMA rate (vfmadd231ps), 12 independent accumulators each: below 1.5, bfloat16 arithmetic does not pay on
//   this CPU and its half kernels widen to float32 instead;
// - training: the Fashion-MNIST MLP and CNN of apps/train_fashion_mnist (same layer stacks, logits layer
//   kept float32) under the policies mixed_float16 and mixed_bfloat16 against float32: per-step
//   train_on_batch time at batch 128 on random data shaped like Fashion-MNIST, and the allocator's peak bytes
//   during one step (absolute, and above what was in use before the step).
// Times are the best of 5 rounds that interleave the variants (after warm-up), so that another process
// running for a while slows them alike.
// The last column is float32's figure divided by the policy's: above 1 is faster, or smaller.
// With --profile DIR, a few steps of each model (or --only's) under each policy are recorded by the profiler
// instead, which prints each policy's top ops (time, calls) and writes its trace under DIR/<model>_<policy>.
// On a machine other programs keep busy, --threads 1 --cpu-time times the rounds by the process's CPU time
// instead of the wall clock, so that time spent waiting for a core counts for no variant.
// Usage: bench_mixed [--json] [--only kernels|mlp|cnn] [--profile DIR] [--threads N (default 2)] [--cpu-time]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "apps/fashion_mnist.h"
#include "bench/bench_util.h"
#include "framework/ember.h"
#include "framework/ops/cpu/dnnl_context.h"

using namespace ember;
using namespace ember::bench;

namespace {

constexpr int64_t kBatch = 128;
constexpr int kBatches = 8;  // distinct random batches cycled through
constexpr int kRounds = 5;   // each figure is the best of this many rounds
bool g_cpu_time = false;     // --cpu-time

void print_vs_f32(const std::string& name, const std::string& unit, double value, double f32, bool json) {
  print({name, unit, "float32", value, f32, f32 / value}, json);
}

// Best milliseconds per call of each of fns (calls calls in a row), measured in kRounds interleaved rounds so
// that a busy moment of the machine hits every variant alike.
std::vector<double> interleaved_ms(int calls, const std::vector<std::function<void()>>& fns) {
  std::vector<double> best(fns.size(), 1e300);
  for (int r = 0; r < kRounds; ++r)
    for (size_t i = 0; i < fns.size(); ++i)
      if (g_cpu_time) {
        const double t0 = process_cpu_seconds();
        for (int c = 0; c < calls; ++c) fns[i]();
        best[i] = std::min(best[i], (process_cpu_seconds() - t0) / calls * 1e3);
      } else {
        best[i] = std::min(best[i], best_seconds(1, [&] {
                                      for (int c = 0; c < calls; ++c) fns[i]();
                                    }) / calls * 1e3);
      }
  return best;
}

// ---------------------------------------------------------------------------------------------------------
// Kernels: one shape each from the CNN at batch 128.

// One core's peak rates, as the library measures them to choose its bfloat16 kernels, at more iterations.
void peak_rows(bool json) {
  const dnnl_ctx::PeakRates r = dnnl_ctx::peak_rates(20'000'000, kRounds);
  if (r.fma_gflops == 0) {
    if (!json) std::printf("bf16_dot_peak: skipped, this CPU has no AVX512-BF16\n");
    return;
  }
  print({"bf16_dot_peak_one_core", "GFLOP/s", "float32 FMA", r.bf16_dot_gflops, r.fma_gflops,
         r.bf16_dot_gflops / r.fma_gflops},
        json);
}

void kernel_rows(bool json) {
  // The dense layer 1600 -> 128: forward x @ W, kernel gradient x^T @ dy, input gradient dy @ W^T.
  const Tensor x_d = random::uniform({kBatch, 1600}, {.minval = -1});
  const Tensor w_d = random::uniform({1600, 128}, {.minval = -1});
  const Tensor dy_d = random::uniform({kBatch, 128}, {.minval = -1});
  // The second convolution: 13x13x32 -> 11x11x64, 3x3 filters.
  const Tensor x_c = random::uniform({kBatch, 13, 13, 32}, {.minval = -1});
  const Tensor w_c = random::uniform({3, 3, 32, 64}, {.minval = -1});
  const Tensor dy_c = random::uniform({kBatch, 11, 11, 64}, {.minval = -1});
  struct Case {
    std::string name;
    int calls;
    std::function<void(DType)> run;
  };
  // Operands are cast once per dtype, outside the timed calls.
  std::map<DType, std::vector<Tensor>> in;
  for (DType dt : {DType::Float32, DType::BFloat16, DType::Float16})
    for (const Tensor& t : {x_d, w_d, dy_d, x_c, w_c, dy_c}) in[dt].push_back(ops::cast(t, dt));
  auto op = [&](DType dt, size_t i) -> const Tensor& { return in.at(dt)[i]; };
  const std::vector<Case> cases = {
      {"matmul_128x1600x128", 20, [&](DType dt) { keep_alive(ops::matmul(op(dt, 0), op(dt, 1)).raw_data()); }},
      {"matmul_grad_kernel", 20,
       [&](DType dt) { keep_alive(ops::matmul(op(dt, 0), op(dt, 2), {.transpose_a = true}).raw_data()); }},
      {"matmul_grad_input", 20,
       [&](DType dt) { keep_alive(ops::matmul(op(dt, 2), op(dt, 1), {.transpose_b = true}).raw_data()); }},
      {"conv_13x13x32_64", 5, [&](DType dt) { keep_alive(ops::conv2d(op(dt, 3), op(dt, 4)).raw_data()); }},
      {"conv_grad_input", 5,
       [&](DType dt) {
         keep_alive(ops::conv2d_backprop_input(op(dt, 3).shape(), op(dt, 4), op(dt, 5)).raw_data());
       }},
      {"conv_grad_filter", 5,
       [&](DType dt) {
         keep_alive(ops::conv2d_backprop_filter(op(dt, 3), op(dt, 4).shape(), op(dt, 5)).raw_data());
       }},
  };
  std::vector<std::vector<double>> ms;  // per case: float32, bfloat16, float16
  for (const Case& c : cases) {
    for (DType dt : {DType::Float32, DType::BFloat16, DType::Float16}) c.run(dt);  // primitive caches
    ms.push_back(interleaved_ms(c.calls, {[&] { c.run(DType::Float32); }, [&] { c.run(DType::BFloat16); },
                                          [&] { c.run(DType::Float16); }}));
  }
  for (size_t k : {1, 2})
    for (size_t i = 0; i < cases.size(); ++i)
      print_vs_f32((k == 1 ? "bf16_" : "f16_") + cases[i].name, "ms", ms[i][k], ms[i][0], json);
  peak_rows(json);
}

// ---------------------------------------------------------------------------------------------------------
// Training steps.

// One model built and compiled under a policy, with its batches; step() trains on the next batch.
struct Trainee {
  std::unique_ptr<Sequential> model;
  std::vector<Tensor> xs, ys;
  int next = 0;

  Trainee(const std::string& kind, const std::string& policy) {
    mixed_precision::set_global_policy(policy);
    model = fashion_mnist::make_model(kind);
    // The policy stays set through compile, as a user's program leaves it; whether compile wraps the
    // optimizer for loss scaling under mixed_float16 is compile's business, not this program's.
    model->compile({.optimizer = optimizers::Adam(),
                    .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                    .metrics = {"accuracy"}});
    mixed_precision::set_global_policy("float32");
    std::vector<int64_t> dims = {kBatch};
    const Shape image = fashion_mnist::image_shape(kind);
    dims.insert(dims.end(), image.begin(), image.end());
    for (int i = 0; i < kBatches; ++i) {
      xs.push_back(random::uniform(Shape(dims)));  // pixels scaled to [0, 1), as the app's pipeline gives them
      ys.push_back(ops::cast(random::uniform({kBatch}, {.maxval = 10}), DType::UInt8));
    }
    for (int i = 0; i < 5; ++i) step();  // builds the optimizer's slots and the kernels' caches
  }
  void step() {
    model->train_on_batch(xs[static_cast<size_t>(next)], ys[static_cast<size_t>(next)]);
    next = (next + 1) % kBatches;
  }
};

const char* const kPolicies[] = {"float32", "mixed_float16", "mixed_bfloat16"};

void train_rows(const std::string& kind, int steps, bool json) {
  // Memory: one model at a time, so the allocator holds nothing else; bytes at the step's peak, and above
  // what was in use when it began.
  double peak[3], transient[3];
  for (int p = 0; p < 3; ++p) {
    Trainee t(kind, kPolicies[p]);
    const Device cpu = Device::cpu();
    const int64_t before = config::memory_info(cpu).bytes_in_use;
    config::reset_memory_stats(cpu);
    t.step();
    const int64_t top = config::memory_info(cpu).peak_bytes;
    peak[p] = static_cast<double>(top) / (1 << 20);
    transient[p] = static_cast<double>(top - before) / (1 << 20);
  }
  // Time: the three models side by side, interleaved.
  Trainee f32(kind, kPolicies[0]), f16(kind, kPolicies[1]), bf16(kind, kPolicies[2]);
  const std::vector<double> ms =
      interleaved_ms(steps, {[&] { f32.step(); }, [&] { f16.step(); }, [&] { bf16.step(); }});
  if (!json)
    std::printf("%s float32: %.3f ms/step, step peak %.2f MiB (%.2f MiB above the step's start)\n", kind.c_str(),
                ms[0], peak[0], transient[0]);
  for (int p = 1; p < 3; ++p) {
    const std::string name = kind + "_" + kPolicies[p];
    print_vs_f32(name + "_step", "ms", ms[p], ms[0], json);
    print_vs_f32(name + "_peak", "MiB", peak[p], peak[0], json);
    print_vs_f32(name + "_transient", "MiB", transient[p], transient[0], json);
  }
}

// The profiler's table of a few steps of each policy, after warm-up.
void profile_rows(const std::string& kind, int steps, const std::string& dir) {
  for (const char* policy : kPolicies) {
    Trainee t(kind, policy);
    std::printf("%s %s, %d steps:\n", kind.c_str(), policy, steps);
    profiler::Profile p(dir + "/" + kind + "_" + policy, {.summary_rows = 40});
    for (int i = 0; i < steps; ++i) t.step();
  }
}

int usage(const char* problem) {
  std::fprintf(stderr,
               "bench_mixed: %s\nusage: bench_mixed [--json] [--only kernels|mlp|cnn] [--profile DIR] [--threads N] "
               "[--cpu-time]\n",
               problem);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  bool json = false;
  std::string only, profile_dir;
  int threads = 2;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      only = argv[++i];
      if (only != "kernels" && only != "mlp" && only != "cnn")
        return usage(("--only got '" + only + "', expected kernels, mlp or cnn").c_str());
    } else if (std::strcmp(argv[i], "--cpu-time") == 0) {
      g_cpu_time = true;
    } else if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
      if (threads < 1) return usage("--threads takes a positive count");
    } else if (std::strcmp(argv[i], "--profile") == 0 && i + 1 < argc) {
      profile_dir = argv[++i];
    } else {
      return usage((std::string("unknown argument '") + argv[i] + "'").c_str());
    }
  }
  try {
    config::set_intra_op_parallelism_threads(threads);
    random::set_seed(42);
    if (!profile_dir.empty()) {
      if (only.empty() || only == "mlp") profile_rows("mlp", 40, profile_dir);
      if (only.empty() || only == "cnn") profile_rows("cnn", 8, profile_dir);
      return 0;
    }
    if (!json)
      std::printf("Mixed precision, %d intra-op threads, batch %lld, %s; reference: float32 in the same run\n",
                  config::get_intra_op_parallelism_threads(), static_cast<long long>(kBatch),
                  g_cpu_time ? "CPU time" : "wall time");
    if (only.empty() || only == "kernels") kernel_rows(json);
    if (only.empty() || only == "mlp") train_rows("mlp", 40, json);
    if (only.empty() || only == "cnn") train_rows("cnn", 8, json);
  } catch (const Error& e) {
    std::fprintf(stderr, "bench_mixed: %s\n", e.what());
    return 1;
  }
  return 0;
}
