// A training step on the GPU queues its work without waiting for the device: the Fashion-MNIST MLP and CNN
// (apps/fashion_mnist.h), in float32 and under mixed_float16, counted by the allocator's host
// synchronisations and requests to the system after a few warm-up steps. float32 steps never wait, and
// take no memory from the system (the cache serves them). Neither do mixed_float16 steps: the LossScaleOptimizer's
// finite check gates Adam's fused update on the device, which makes its step size from the device's iteration
// count. train_on_batch then waits once per value of its logs (reading them). All [cuda]: skipped without a GPU.
#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "apps/fashion_mnist.h"
#include "framework/ember.h"

using namespace ember;

namespace {

constexpr Device kCpu = Device::cpu();
constexpr Device kGpu = Device::cuda(0);
constexpr int64_t kBatch = 128;
constexpr int kWarmup = 3;
constexpr int kSteps = 5;

struct PolicyScope {
  mixed_precision::Policy old = mixed_precision::global_policy();
  explicit PolicyScope(const std::string& name) { mixed_precision::set_global_policy(name); }
  ~PolicyScope() { mixed_precision::set_global_policy(old); }
};

struct Counts {
  int64_t syncs, system_allocations;
};

Counts counts() {
  const Allocator& a = allocator_for(kGpu);
  return {a.host_synchronizations(), a.memory_info().system_allocations};
}

// One batch of images in [0, 1) and labels in [0, 10), made on the CPU and moved to the GPU once.
data::Element batch_for(const std::string& kind) {
  DeviceScope on(kCpu);
  std::vector<int64_t> dims = {kBatch};
  for (int64_t d : fashion_mnist::image_shape(kind)) dims.push_back(d);
  const Tensor x = random::uniform(Shape(dims), {.seed = 3});
  std::vector<int64_t> labels(static_cast<size_t>(kBatch));
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int64_t>((i * 7) % 10);
  return {x.to(kGpu), Tensor::from_vector(labels, {kBatch}).to(kGpu)};
}

void check_step_does_not_wait(const std::string& kind, const std::string& policy) {
  INFO(kind << " under " << policy);
  PolicyScope scope(policy);
  DeviceScope on(kGpu);
  backend::clear_session();
  random::set_seed(1);
  std::unique_ptr<Sequential> m = fashion_mnist::make_model(kind);
  m->compile({.optimizer = optimizers::Adam({.learning_rate = 1e-3}),
              .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
  const data::Element batch = batch_for(kind);
  for (int s = 0; s < kWarmup; ++s) m->train_on_batch(batch[0], batch[1]);

  const Counts before = counts();
  for (int s = 0; s < kSteps; ++s) m->train_step(batch);
  const Counts after = counts();
  allocator_for(kGpu).synchronize();  // the steps' faults, if any, surface here
  CHECK(after.syncs - before.syncs == 0);
  CHECK(after.system_allocations - before.system_allocations == 0);

  const Counts logs_before = counts();
  const Logs logs = m->train_on_batch(batch[0], batch[1]);
  const Counts logs_after = counts();
  CHECK(logs_after.syncs - logs_before.syncs <= static_cast<int64_t>(logs.size()));
  CHECK(logs_after.system_allocations - logs_before.system_allocations == 0);
}

}  // namespace

TEST_CASE("a GPU training step queues its work without waiting for the device", "[cuda]") {
  if (device_count(DeviceType::CUDA) == 0) {
    WARN("no CUDA device (device_count(DeviceType::CUDA) == 0): skipped");
    return;
  }
#if !defined(NDEBUG)
  WARN("a debug build synchronises after every kernel launch: skipped");
  return;
#endif
  for (const char* kind : {"mlp", "cnn"})
    for (const char* policy : {"float32", "mixed_float16"}) check_step_does_not_wait(kind, policy);
}

TEST_CASE("a bad index on the GPU is reported at the next synchronisation, naming the op", "[cuda]") {
  if (device_count(DeviceType::CUDA) == 0) {
    WARN("no CUDA device (device_count(DeviceType::CUDA) == 0): skipped");
    return;
  }
  DeviceScope on(kGpu);
  const Tensor params = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {4});
  const Tensor bad = Tensor::from_vector(std::vector<int64_t>{0, 5, 1}, {3});
  const Tensor good = Tensor::from_vector(std::vector<int64_t>{3, 0}, {2});
  const int64_t syncs = allocator_for(kGpu).host_synchronizations();
  Tensor gathered;
  CHECK_NOTHROW(gathered = ops::gather(params, bad));  // queued: the check runs on the device
  CHECK(allocator_for(kGpu).host_synchronizations() == syncs);
  CHECK_THROWS_WITH(gathered.to(kCpu), Catch::Contains("gather") && Catch::Contains("indices[1]") &&
                                           Catch::Contains("[0, 4)"));
  // Reported once: the device stays usable and later reads succeed.
  CHECK(ops::gather(params, good).to(kCpu).to_vector<float>() == std::vector<float>{4, 1});

  const Tensor logits = Tensor::from_vector(std::vector<float>{0, 1, 2, 3, 4, 5}, {2, 3});
  const Tensor labels = Tensor::from_vector(std::vector<int32_t>{2, -1}, {2});
  Tensor loss;
  CHECK_NOTHROW(loss = ops::sparse_softmax_cross_entropy_with_logits(labels, logits));
  CHECK_THROWS_WITH(loss.to(kCpu), Catch::Contains("sparse_softmax_cross_entropy_with_logits") &&
                                       Catch::Contains("labels[1]"));

  const Tensor data = Tensor::from_vector(std::vector<float>{1, 2, 3}, {3});
  const Tensor ids = Tensor::from_vector(std::vector<int32_t>{0, 2, 1}, {3});
  Tensor sums;
  CHECK_NOTHROW(sums = ops::unsorted_segment_sum(data, ids, 2));
  CHECK_THROWS_WITH(sums.to(kCpu), Catch::Contains("unsorted_segment_sum") && Catch::Contains("segment_ids[1]"));
}
