// ember::function against eager on whole training steps, 2 intra-op threads (--threads): the Fashion-MNIST MLP
// at batch 1, 8 and 128 and the Keras example CNN at batch 128 (the models of apps/train_fashion_mnist), each step a
// GradientTape, SparseCategoricalCrossentropy from logits and Adam's apply, on random data shaped like
// Fashion-MNIST, and the MLP and the CNN at batch 128 under mixed_bfloat16. Eager calls the step's lambda; function calls the same lambda wrapped in ember::function, on
// its own model and optimizer seeded as eager's, so both do the same work; jit is the function with jit_compile
// (fused elementwise chains).
// Times are the median of 7 rounds (--rounds) that interleave the three, each going first in turn, so that a
// busy moment of the machine or a warm cache favours none; speedup = eager / function (or / jit).
// Memory: the CPU allocator's peak bytes during one CNN step (absolute, and above what was in use before it: the
// function's memory plan keeps its arena between calls), with one model alive at a time.
// Plan: the function's static memory plan (values planned, the arena against one buffer each) and the CPU
// allocations a step makes, eager and replayed.
// Epilogue: jit_compile's chain in a product's node (a Dense forward with gelu or mish) against the chain apart.
// Profiler: the eager MLP step at batch 1 (the most ops per second: the profiler's worst case) and the CNN step,
// recorded by the profiler against not, in interleaved rounds; overhead = on / off - 1.
// On a machine other programs keep busy, --threads 1 --cpu-time times the rounds by the process's CPU time
// instead of the wall clock, so that time spent waiting for a core counts for neither side.
// With --profile DIR, the cases' steps (or --only's) are recorded by the profiler instead of timed: each of eager,
// function and jit after warm-up, its op table printed and its trace written under DIR.
// Usage: bench_function [--json] [--only mlp_b1|mlp_b8|mlp_b128|cnn_b128|mlp_b128_mixed_bf16|cnn_b128_mixed_bf16|
//                                      memory|plan|profiler|epilogue] [--rounds N]
//                       [--threads N] [--cpu-time] [--profile DIR]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "apps/fashion_mnist.h"
#include "bench/bench_util.h"
#include "framework/ember.h"

using namespace ember;
using namespace ember::bench;

namespace {

constexpr int kBatches = 8;  // distinct random batches cycled through
bool g_cpu_time = false;     // --cpu-time

// Seconds on the clock rounds are timed by: the wall clock, or the process's CPU time with --cpu-time.
double seconds_now() {
  if (!g_cpu_time) return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
  return process_cpu_seconds();
}
constexpr int kWarmup = 5;   // steps before timing: the function's first traces, Adam builds its slots
constexpr uint64_t kSeed = 42;

struct Case {
  std::string name, kind;  // kind: the fashion_mnist model
  int64_t batch;
  int steps;  // per timed round, so that a round lasts a few hundred milliseconds
  std::string policy = "float32";  // the global mixed-precision policy the models are built under
};
const Case kCases[] = {
    {"mlp_b1", "mlp", 1, 2000},
    {"mlp_b8", "mlp", 8, 2000},
    {"mlp_b128", "mlp", 128, 300},
    {"cnn_b128", "cnn", 128, 20},
    // Mixed precision: half chains and the casts around them are what jit_compile fuses here.
    {"mlp_b128_mixed_bf16", "mlp", 128, 300, "mixed_bfloat16"},
    {"cnn_b128_mixed_bf16", "cnn", 128, 10, "mixed_bfloat16"},
};

// One model with its optimizer and loss; the seed makes two of them start with the same weights.
struct Trainee {
  std::unique_ptr<Sequential> model;
  optimizers::Adam opt;
  losses::SparseCategoricalCrossentropy loss_fn{{.from_logits = true}};

  explicit Trainee(const std::string& kind) {
    random::set_seed(kSeed);
    model = fashion_mnist::make_model(kind);
  }
};

// The training step, the lambda a user writes; eager calls it, ember::function wraps it.
auto step_of(Trainee& t) {
  return [&t](const Tensor& x, const Tensor& y) {
    GradientTape tape;
    Tensor loss = t.loss_fn(y, (*t.model)(x, /*training=*/true));
    std::vector<Variable> vars = t.model->trainable_weights();
    t.opt.apply(tape.gradient(loss, vars), vars);
    return loss;
  };
}

// The step traced by ember::function, with jit_compile or without.
auto compiled_step_of(Trainee& t, const Case& c, bool jit) {
  return ember::function(step_of(t), {.jit_compile = jit, .name = (jit ? "jit_train_step_" : "train_step_") + c.name});
}

struct Batches {
  std::vector<Tensor> xs, ys;
  Batches(const std::string& kind, int64_t batch) {
    std::vector<int64_t> dims = {batch};
    const Shape image = fashion_mnist::image_shape(kind);
    dims.insert(dims.end(), image.begin(), image.end());
    for (int i = 0; i < kBatches; ++i) {
      xs.push_back(random::uniform(Shape(dims)));  // pixels scaled to [0, 1), as the app's pipeline gives them
      ys.push_back(ops::cast(random::uniform({batch}, {.maxval = 10}), DType::UInt8));
    }
  }
};

// Runs `steps` steps of `step` over the batches from `next` on; returns seconds.
template <class Step>
double run_steps(Step& step, const Batches& b, int steps, int& next) {
  const double t0 = seconds_now();
  for (int i = 0; i < steps; ++i) {
    keep_alive(step(b.xs[static_cast<size_t>(next)], b.ys[static_cast<size_t>(next)]).raw_data());
    next = (next + 1) % kBatches;
  }
  return seconds_now() - t0;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void print_header(bool json) {
  if (!json)
    std::printf("%-30s %10s %12s %8s %14s %9s %8s %11s %6s %6s\n", "case", "eager us", "function us", "speedup",
                "rounds", "jit us", "jit", "1st call ms", "nodes", "jit");
}

// The global mixed-precision policy a case's models are built under, float32 again afterwards.
struct PolicyScope {
  explicit PolicyScope(const std::string& name) { mixed_precision::set_global_policy(name); }
  ~PolicyScope() { mixed_precision::set_global_policy("float32"); }
};

void step_rows(const Case& c, int rounds, bool json) {
  const PolicyScope policy(c.policy);
  Trainee eager_t(c.kind), function_t(c.kind), jit_t(c.kind);
  const Batches b(c.kind, c.batch);
  auto eager = step_of(eager_t);
  auto function = compiled_step_of(function_t, c, false);
  auto jit = compiled_step_of(jit_t, c, true);
  int next_e = 0, next_f = 0, next_j = 0;
  // Eager warms the kernels' caches first, so that the function's first call (which traces, runs the step
  // and builds Adam's slots) costs what a user's first call costs in a warm process.
  run_steps(eager, b, kWarmup, next_e);
  const double first_call_s = run_steps(function, b, 1, next_f);
  run_steps(function, b, kWarmup - 1, next_f);
  run_steps(jit, b, kWarmup, next_j);

  std::vector<double> eager_us, function_us, jit_us, speedups, jit_speedups;
  for (int r = 0; r < rounds; ++r) {
    double t[3] = {};
    for (int k = 0; k < 3; ++k) {  // each of the three goes first in turn
      const int which = (r + k) % 3;
      if (which == 0) t[0] = run_steps(eager, b, c.steps, next_e);
      else if (which == 1) t[1] = run_steps(function, b, c.steps, next_f);
      else t[2] = run_steps(jit, b, c.steps, next_j);
    }
    eager_us.push_back(t[0] / c.steps * 1e6);
    function_us.push_back(t[1] / c.steps * 1e6);
    jit_us.push_back(t[2] / c.steps * 1e6);
    speedups.push_back(t[0] / t[1]);
    jit_speedups.push_back(t[0] / t[2]);
  }
  const double e = median(eager_us), f = median(function_us), j = median(jit_us);
  if (json) {
    print({"function_" + c.name, "us/step", "eager", f, e, e / f}, json);
    print({"jit_" + c.name, "us/step", "eager", j, e, e / j}, json);
    return;
  }
  const auto [lo, hi] = std::minmax_element(speedups.begin(), speedups.end());
  const size_t nodes = function.concrete_functions().at(0)->graph().nodes.size();
  const size_t jit_nodes = jit.concrete_functions().at(0)->graph().nodes.size();
  char range[32];
  std::snprintf(range, sizeof range, "%.2f-%.2fx", *lo, *hi);
  std::printf("%-30s %10.1f %12.1f %7.3fx %14s %9.1f %7.3fx %11.1f %6zu %6zu\n", ("function_" + c.name).c_str(), e, f,
              e / f, range, j, e / j, first_call_s * 1e3, nodes, jit_nodes);
  std::fflush(stdout);
}

// The profiler's table of the case's steps, eager, function and jit each alone after warm-up.
void profile_rows(const Case& c, const std::string& dir) {
  const PolicyScope policy(c.policy);
  const Batches b(c.kind, c.batch);
  auto profile = [&](const std::string& which, auto& step) {
    int next = 0;
    run_steps(step, b, kWarmup, next);
    std::printf("%s %s, %d steps:\n", c.name.c_str(), which.c_str(), c.steps);
    profiler::Profile p(dir + "/" + c.name + "_" + which, {.summary_rows = 40});
    run_steps(step, b, c.steps, next);
  };
  Trainee eager_t(c.kind), function_t(c.kind), jit_t(c.kind);
  auto eager = step_of(eager_t);
  auto function = compiled_step_of(function_t, c, false);
  auto jit = compiled_step_of(jit_t, c, true);
  profile("eager", eager);
  profile("function", function);
  profile("jit", jit);
}

struct StepMemory {
  double peak, transient;  // bytes at the step's peak, and above what was in use when it began
};

// One step's allocator peak for a trainee alone in the process (the caller keeps no other model alive).
template <class Step>
StepMemory measure_step(Step& step, const Batches& b) {
  int next = 0;
  run_steps(step, b, kWarmup, next);
  const Device cpu = Device::cpu();
  const int64_t before = config::memory_info(cpu).bytes_in_use;
  config::reset_memory_stats(cpu);
  run_steps(step, b, 1, next);
  const int64_t top = config::memory_info(cpu).peak_bytes;
  return {static_cast<double>(top), static_cast<double>(top - before)};
}

void memory_rows(bool json) {
  const Batches b("cnn", 128);
  StepMemory eager_m, function_m;
  {
    Trainee t("cnn");
    auto eager = step_of(t);
    eager_m = measure_step(eager, b);
  }
  {
    Trainee t("cnn");
    auto function = ember::function(step_of(t));
    function_m = measure_step(function, b);
  }
  const double mib = 1 << 20;
  if (json) {
    print({"function_cnn_b128_peak_memory", "bytes", "eager", function_m.peak, eager_m.peak,
           eager_m.peak / function_m.peak},
          json);
    print({"function_cnn_b128_transient_memory", "bytes", "eager", function_m.transient, eager_m.transient,
           eager_m.transient / function_m.transient},
          json);
    return;
  }
  std::printf("%-34s %12s %12s %8s\n", "one CNN step, allocator bytes", "eager MiB", "function MiB", "ratio");
  std::printf("%-34s %12.2f %12.2f %7.3fx\n", "function_cnn_b128_peak_memory", eager_m.peak / mib,
              function_m.peak / mib, eager_m.peak / function_m.peak);
  std::printf("%-34s %12.2f %12.2f %7.3fx\n", "function_cnn_b128_transient_memory", eager_m.transient / mib,
              function_m.transient / mib, eager_m.transient / function_m.transient);
  std::fflush(stdout);
}

// CPU allocations per step after the warm-up.
template <class Step>
double allocations_per_step(Step& step, const Batches& b) {
  constexpr int kSteps = 10;
  int next = 0;
  run_steps(step, b, kWarmup, next);
  const int64_t before = config::memory_info(Device::cpu()).allocation_count;
  run_steps(step, b, kSteps, next);
  return static_cast<double>(config::memory_info(Device::cpu()).allocation_count - before) / kSteps;
}

void plan_rows(bool json) {
  if (!json)
    std::printf("%-22s %8s %11s %11s %13s %13s\n", "memory plan", "planned", "arena KiB", "naive KiB",
                "eager allocs", "function allocs");
  for (const Case& c : kCases) {
    if (c.name == "mlp_b8") continue;
    const PolicyScope policy(c.policy);
    const Batches b(c.kind, c.batch);
    Trainee eager_t(c.kind), function_t(c.kind);
    auto eager = step_of(eager_t);
    auto function = ember::function(step_of(function_t));
    const double eager_allocs = allocations_per_step(eager, b), function_allocs = allocations_per_step(function, b);
    const graph::MemoryPlanStats s = function.concrete_functions().at(0)->memory_plan_stats();
    if (json) {
      print({"function_" + c.name + "_allocations", "allocations/step", "eager", function_allocs, eager_allocs,
             eager_allocs / function_allocs},
            json);
      continue;
    }
    std::printf("%-22s %8d %11.1f %11.1f %13.1f %13.1f\n", ("plan_" + c.name).c_str(), s.planned_values,
                static_cast<double>(s.arena_bytes) / 1024, static_cast<double>(s.naive_bytes) / 1024, eager_allocs,
                function_allocs);
    std::fflush(stdout);
  }
}

// The profiler's cost while it records: the same eager step with it on and off, each round alternating which
// goes first; each recorded round is one profile (start, steps, stop writing its trace, no table printed).
void profiler_rows(int rounds, bool json) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "ember_bench_function_profile";
  if (!json) std::printf("%-22s %10s %12s %9s\n", "profiler, eager step", "off us", "on us", "overhead");
  for (const Case& c : kCases) {
    if (c.name != "mlp_b1" && c.name != "cnn_b128") continue;
    Trainee t(c.kind);
    const Batches b(c.kind, c.batch);
    auto step = step_of(t);
    int next = 0;
    run_steps(step, b, kWarmup, next);
    std::vector<double> off_us, on_us;
    for (int r = 0; r < rounds; ++r) {
      for (int k = 0; k < 2; ++k) {
        if ((r + k) % 2 == 0) {
          off_us.push_back(run_steps(step, b, c.steps, next) / c.steps * 1e6);
        } else {
          profiler::start(dir.string(), {.print_summary = false});
          on_us.push_back(run_steps(step, b, c.steps, next) / c.steps * 1e6);
          profiler::stop();
        }
      }
    }
    const double off = median(off_us), on = median(on_us);
    if (json) {
      print({"profiler_on_" + c.name, "us/step", "profiler off", on, off, off / on}, json);
    } else {
      std::printf("%-22s %10.1f %12.1f %8.1f%%\n", ("profiler_" + c.name).c_str(), off, on, (on / off - 1) * 100);
      std::fflush(stdout);
    }
  }
  std::filesystem::remove_all(dir);
}

// jit_compile's epilogue fusion: a Dense layer's forward (matmul_bias, then gelu scaled by 2, or mish) compiled with
// jit, the chain in the product's node against the same chain reading a view of the product (which keeps the product
// a node of its own), interleaved rounds, best of each.
void epilogue_rows(int rounds, bool json) {
  struct Shape3 {
    int64_t batch, in, out;
  };
  if (!json) std::printf("%-34s %14s %14s %9s\n", "jit, Dense forward", "chain apart us", "epilogue us", "speedup");
  for (const std::string act : {"gelu", "mish"})
    for (const Shape3 c : {Shape3{128, 784, 1024}, Shape3{4096, 16, 512}, Shape3{1024, 64, 1024}}) {
      auto forward = [act](bool apart) {
        return [act, apart](const Tensor& x, const Tensor& w, const Tensor& b) {
          Tensor z = ops::matmul_bias(x, w, b);
          if (apart) z = ops::reshape(z, z.shape());
          return act == "gelu" ? ops::gelu(z) * 2.0f : z * ops::tanh(ops::softplus(z));
        };
      };
      const Tensor x = random::normal({c.batch, c.in}, {.seed = 1}), w = random::normal({c.in, c.out}, {.seed = 2}),
                   b = random::normal({c.out}, {.seed = 3});
      auto apart = ember::function(forward(true), {.jit_compile = true});
      auto fused = ember::function(forward(false), {.jit_compile = true});
      constexpr int kCalls = 50;
      std::vector<double> us[2];
      for (int r = 0; r < rounds; ++r)
        for (int k = 0; k < 2; ++k) {
          const int which = (r + k) % 2;
          auto& f = which ? fused : apart;
          f(x, w, b);
          const double t0 = seconds_now();
          for (int i = 0; i < kCalls; ++i) f(x, w, b);
          us[which].push_back((seconds_now() - t0) / kCalls * 1e6);
        }
      const double apart_us = *std::min_element(us[0].begin(), us[0].end());
      const double fused_us = *std::min_element(us[1].begin(), us[1].end());
      const std::string name = "jit_epilogue_" + act + "_" + std::to_string(c.batch) + "x" + std::to_string(c.in) +
                               "x" + std::to_string(c.out);
      if (json) {
        print({name, "us/call", "chain apart", fused_us, apart_us, apart_us / fused_us}, json);
      } else {
        std::printf("%-34s %14.1f %14.1f %8.3fx\n", name.c_str(), apart_us, fused_us, apart_us / fused_us);
        std::fflush(stdout);
      }
    }
}

int usage(const char* problem) {
  std::fprintf(stderr,
               "bench_function: %s\nusage: bench_function [--json] "
               "[--only mlp_b1|mlp_b8|mlp_b128|cnn_b128|memory|plan|profiler|epilogue] [--rounds N] [--threads N] "
               "[--cpu-time] [--profile DIR]\n",
               problem);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  bool json = false;
  std::string only, profile_dir;
  int rounds = 7, threads = 2;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      only = argv[++i];
      bool known = only == "memory" || only == "plan" || only == "profiler" || only == "epilogue";
      for (const Case& c : kCases) known = known || only == c.name;
      if (!known) return usage(("--only got '" + only + "', expected a case, memory, plan, profiler or epilogue").c_str());
    } else if (std::strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
      if (rounds < 1) return usage("--rounds takes a count of at least 1");
    } else if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
      if (threads < 1) return usage("--threads takes a count of at least 1");
    } else if (std::strcmp(argv[i], "--cpu-time") == 0) {
      g_cpu_time = true;
    } else if (std::strcmp(argv[i], "--profile") == 0 && i + 1 < argc) {
      profile_dir = argv[++i];
    } else {
      return usage((std::string("unknown argument '") + argv[i] + "'").c_str());
    }
  }
  try {
    config::set_intra_op_parallelism_threads(threads);
    if (!profile_dir.empty()) {
      for (const Case& c : kCases)
        if (only.empty() || only == c.name) profile_rows(c, profile_dir);
      return 0;
    }
    if (!json)
      std::printf("ember::function against eager, one training step (Adam, cross-entropy from logits), %d intra-op "
                  "threads; median of %d interleaved rounds (%s); speedup > 1: the function is faster\n",
                  config::get_intra_op_parallelism_threads(), rounds, g_cpu_time ? "CPU time" : "wall time");
    bool header = false;
    for (const Case& c : kCases) {
      if (!only.empty() && only != c.name) continue;
      if (!header) print_header(json), header = true;
      step_rows(c, rounds, json);
    }
    if (only.empty() || only == "memory") memory_rows(json);
    if (only.empty() || only == "plan") plan_rows(json);
    if (only.empty() || only == "profiler") profiler_rows(rounds, json);
    if (only.empty() || only == "epilogue") epilogue_rows(rounds, json);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_function: %s\n", e.what());
    return 1;
  }
  return 0;
}
