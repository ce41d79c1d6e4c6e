// GPU ops issued from several host threads at once: each thread's results are those of the same ops run
// alone (the per-device dispatch lock keeps a thread's launches together on the device's stream), gradients
// included (their constants come from the device's scalar cache). The [cuda] case skips without a GPU.
#include <catch2/catch.hpp>

#include <cmath>
#include <thread>
#include <vector>

#include "framework/ember.h"
#include "tests/support/tensor_testing.h"

using namespace ember;

namespace {

// A forward and backward mix of library calls (cuBLASLt, cuDNN), elementwise ops, reductions and gradients
// whose backward formulas use 0-d constants (relu6, where, reduce_prod), all on `device`.
// The inputs: x, the filters and the dense kernel, made once on the CPU (a seeded op draws new values on
// each call).
std::vector<Tensor> threads_inputs(uint64_t seed) {
  DeviceScope on_cpu(Device::cpu());
  return {random::normal({8, 12, 12, 8}, {.seed = seed}), random::normal({3, 3, 8, 16}, {.seed = seed + 1}),
          random::normal({16, 10}, {.seed = seed + 2})};
}

std::vector<Tensor> threads_workload(const std::vector<Tensor>& in, Device device) {
  const Tensor x = in[0].to(device), f = in[1].to(device), w = in[2].to(device);
  GradientTape tape;
  tape.watch(x);
  tape.watch(w);
  const Tensor h = ops::relu6(ops::conv2d(x, f, {.padding = "SAME"}));
  const Tensor pooled = ops::reduce_mean(h, {1, 2});
  const Tensor logits = ops::matmul(pooled, w);
  const Tensor loss = ops::add(ops::reduce_sum(ops::square(logits)), ops::reduce_prod(ops::reduce_mean(logits, {0})));
  std::vector<Tensor> out = tape.gradient(loss, {x, w});
  out.push_back(logits);
  for (Tensor& t : out) t = t.to(Device::cpu());
  return out;
}

}  // namespace

TEST_CASE("GPU ops from several host threads at once give each thread's results", "[cuda][threads]") {
  if (device_count(DeviceType::CUDA) == 0) {
    WARN("no CUDA device (device_count(DeviceType::CUDA) == 0): skipped");
    return;
  }
  constexpr int kThreads = 4, kRounds = 5;
  const Device gpu = Device::cuda(0);
  std::vector<std::vector<Tensor>> inputs, alone;
  for (int t = 0; t < kThreads; ++t) inputs.push_back(threads_inputs(100 + 10 * static_cast<uint64_t>(t)));
  for (int t = 0; t < kThreads; ++t) alone.push_back(threads_workload(inputs[static_cast<size_t>(t)], gpu));
  std::vector<int> bad(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        const std::vector<Tensor> got = threads_workload(inputs[static_cast<size_t>(t)], gpu);
        for (size_t i = 0; i < got.size(); ++i) {
          const std::vector<double> g = testing::values_as_double(got[i]),
                                    e = testing::values_as_double(alone[static_cast<size_t>(t)][i]);
          for (size_t j = 0; j < g.size(); ++j) bad[static_cast<size_t>(t)] += std::abs(g[j] - e[j]) > 1e-4 * (1 + std::abs(e[j]));
        }
      }
    });
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    INFO("thread " << t);
    CHECK(bad[static_cast<size_t>(t)] == 0);
  }
  // The gradients agree with the CPU's too.
  const std::vector<Tensor> cpu = threads_workload(inputs[0], Device::cpu());
  for (size_t i = 0; i < cpu.size(); ++i) {
    const std::vector<double> g = testing::values_as_double(alone[0][i]), c = testing::values_as_double(cpu[i]);
    int off = 0;
    for (size_t j = 0; j < g.size(); ++j) off += std::abs(g[j] - c[j]) > 2e-2 * (1 + std::abs(c[j]));  // TF32
    CHECK(off == 0);
  }
}
