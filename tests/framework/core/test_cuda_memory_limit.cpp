// config::set_memory_limit and set_memory_growth on the GPU (TF: tf.config.set_logical_device_configuration
// memory_limit, tf.config.experimental.set_memory_growth). Both must come before the device's first
// allocation, so this is an executable of its own with one test case: under ctest, and under
// scripts/gpu_check.sh's "[cuda]" run, it starts in a fresh process with an untouched device.
#include <catch2/catch.hpp>

#include <string>

#include "framework/ember.h"

using namespace ember;

TEST_CASE("a GPU memory limit set before the first allocation caps the allocator", "[cuda][allocator]") {
  if (device_count(DeviceType::CUDA) == 0) {
    WARN("no CUDA device (device_count(DeviceType::CUDA) == 0): skipped");
    return;
  }
  const Device gpu = Device::cuda(0);
  const int64_t limit = int64_t{256} << 20;
  config::set_memory_growth(gpu, true);
  config::set_memory_limit(gpu, limit);
  CHECK(config::get_memory_growth(gpu));

  // Within the limit: fine, and with growth on the allocator holds no more than it must (and never past the limit).
  {
    const Tensor a = Tensor::empty({(int64_t{64} << 20) / 4}, DType::Float32, gpu);
    const MemoryInfo m = config::memory_info(gpu);
    CHECK(m.bytes_in_use >= int64_t{64} << 20);
    CHECK(m.bytes_reserved <= limit);
  }
  // Past it: ResourceExhausted, though the GPU itself has room.
  std::string message;
  try {
    const Tensor big = Tensor::empty({(int64_t{512} << 20) / 4}, DType::Float32, gpu);
    FAIL("allocating 512 MiB under a 256 MiB limit succeeded");
  } catch (const ResourceExhausted& e) {
    message = e.what();
  }
  INFO("message: " << message);
  CHECK((message.find("cuda:0") != std::string::npos || message.find("GPU") != std::string::npos));
  CHECK(message.find("batch") != std::string::npos);
  // Two allocations that fit alone but not together.
  {
    const Tensor a = Tensor::empty({(int64_t{160} << 20) / 4}, DType::Float32, gpu);
    CHECK_THROWS_AS(Tensor::empty({(int64_t{160} << 20) / 4}, DType::Float32, gpu), ResourceExhausted);
  }
  // Freed memory is usable again, and ops keep working.
  {
    DeviceScope on(gpu);
    const Tensor b = ops::ones({(int64_t{160} << 20) / 4});
    CHECK(ops::reduce_sum(ops::slice(b, {0}, {1000})).item<float>() == 1000.0f);
  }
  CHECK(config::memory_info(gpu).bytes_reserved <= limit);
  // Too late to change either now.
  CHECK_THROWS_AS(config::set_memory_limit(gpu, int64_t{1} << 30), Error);
  CHECK_THROWS_AS(config::set_memory_growth(gpu, false), Error);
}
