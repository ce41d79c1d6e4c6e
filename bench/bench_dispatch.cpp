// Eager dispatch overhead: nanoseconds per ops::add on a 1-element and a 32x32 float32 tensor, beside the
// same arithmetic as a plain C++ loop (ns per iteration) measured in the same run. speedup = loop / ember,
// so it shows how many plain iterations one eager op costs (far below 1: the price of dispatch). replay_add_1: ns
// per op of a chain of 1-element adds replayed by ember::function, beside the same chain run eagerly.
// Usage: bench_dispatch [--json]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "framework/ember.h"

using namespace ember;

namespace {

using namespace ember::bench;

// Best nanoseconds per iteration over `batches` timed batches of `iters` calls, after one warm-up batch.
template <class F>
double best_ns_per_iter(int batches, int64_t iters, F&& fn) {
  for (int64_t i = 0; i < iters; ++i) fn();
  double best = 1e300;
  for (int b = 0; b < batches; ++b) {
    auto t0 = Clock::now();
    for (int64_t i = 0; i < iters; ++i) fn();
    best = std::min(best, std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / iters);
  }
  return best;
}


Row measure(const std::string& name, int64_t rows, int64_t cols) {
  const int64_t n = rows * cols;
  std::vector<float> va(static_cast<size_t>(n)), vb(static_cast<size_t>(n)), vc(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    va[static_cast<size_t>(i)] = 0.5f * static_cast<float>(i % 7);
    vb[static_cast<size_t>(i)] = 0.25f * static_cast<float>(i % 5);
  }
  const Shape shape = rows == 1 ? Shape{cols} : Shape{rows, cols};
  const Tensor a = Tensor::from_vector(va, shape), b = Tensor::from_vector(vb, shape);
  Tensor c;
  const double ember_ns = best_ns_per_iter(7, 20000, [&] {
    c = ops::add(a, b);
    keep_alive(c.raw_data());
  });
  // Enough loop iterations for a batch to last well over the clock's resolution.
  const int64_t loop_iters = std::max<int64_t>(20000, 20000000 / n);
  const double loop_ns = best_ns_per_iter(7, loop_iters, [&] {
    const float* __restrict pa = va.data();
    const float* __restrict pb = vb.data();
    float* __restrict pc = vc.data();
    keep_alive(pa);
    keep_alive(pb);
    for (int64_t i = 0; i < n; ++i) pc[i] = pa[i] + pb[i];
    keep_alive(pc);
  });
  if (c.to_vector<float>() != std::vector<float>(vc.begin(), vc.end()))
    std::fprintf(stderr, "bench_dispatch: %s: ember and the plain loop disagree\n", name.c_str());
  return {name, "ns", "plain_loop", ember_ns, loop_ns, loop_ns / ember_ns};
}

// A chain of kChain adds on 1-element tensors, eager and replayed by ember::function: ns per op. The replay skips
// each op's front end (shape inference, the tape's check) and, while nothing observes ops, dispatch itself.
Row measure_replay() {
  constexpr int kChain = 64;
  const Tensor x = Tensor::from_vector<float>({0.5f}, {1}), b = Tensor::from_vector<float>({0.25f}, {1});
  auto chain = [&](const Tensor& in) {
    Tensor y = in;
    for (int i = 0; i < kChain; ++i) y = ops::add(y, b);
    return y;
  };
  auto traced = ember::function(chain);
  Tensor eager, replayed;
  const double eager_ns = best_ns_per_iter(7, 2000, [&] {
    eager = chain(x);
    keep_alive(eager.raw_data());
  });
  const double replay_ns = best_ns_per_iter(7, 2000, [&] {
    replayed = traced(x);
    keep_alive(replayed.raw_data());
  });
  if (eager.to_vector<float>() != replayed.to_vector<float>())
    std::fprintf(stderr, "bench_dispatch: replay_add_1: eager and the replay disagree\n");
  return {"replay_add_1", "ns", "eager", replay_ns / kChain, eager_ns / kChain, eager_ns / replay_ns};
}

}  // namespace

int main(int argc, char** argv) {
  const bool json = json_requested(argc, argv);
  if (!json)
    std::printf("eager float32 add, best of 7 batches, %d intra-op thread(s)\n",
                config::get_intra_op_parallelism_threads());
  print(measure("dispatch_add_1", 1, 1), json);
  print(measure("dispatch_add_32x32", 32, 32), json);
  print(measure_replay(), json);
  return 0;
}
