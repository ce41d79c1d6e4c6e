// The GPU at its limits: an out-of-memory inside an op's library workspace request is a clean
// ResourceExhausted and the process goes on; TF_FORCE_GPU_ALLOW_GROWTH turns memory growth on; a tensor of
// more than 2^31 elements goes through an elementwise op, a concatenation and a reduction. Memory options
// hold from a device's first allocation on, so each case runs this executable's hidden child case of its
// own in a fresh process. The [cuda] cases skip without a GPU; the large tensor's also without the memory.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "framework/ember.h"
#include "tests/support/self_child.h"

using namespace ember;

namespace {

bool has_gpu() { return device_count(DeviceType::CUDA) > 0; }

// This executable's hidden case `name` under `env` (a shell prefix): its stdout and stderr together.
std::string limits_child(const std::string& env, const std::string& name) {
  return ember::testing::run_self_case("env -u TF_FORCE_GPU_ALLOW_GROWTH " + env, name);
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

constexpr int64_t kMiB = int64_t{1} << 20;

}  // namespace

TEST_CASE("workspace oom child", "[.]") {
  const Device gpu = Device::cuda(0);
  config::set_memory_limit(gpu, 256 * kMiB);
  DeviceScope on(gpu);
  const Tensor a = ops::ones({64, 64}), b = ops::ones({64, 64});
  std::string status = "no error";
  {
    // The operands are in place; the largest filler that fits (in 8 MiB steps) leaves less of the limit than
    // cuBLASLt's 32 MiB workspace.
    Tensor filler;
    for (int64_t mib = 256; !filler.defined() && mib > 0; mib -= 8) {
      try {
        filler = Tensor::empty({mib * kMiB / 4}, DType::Float32, gpu);
      } catch (const ResourceExhausted&) {
      }
    }
    try {
      (void)ops::matmul(a, b).to(Device::cpu());
    } catch (const ResourceExhausted& e) {
      status = std::string("ResourceExhausted: ") + e.what();
    } catch (const std::exception& e) {
      status = std::string("another error: ") + e.what();
    }
  }
  // The filler is gone: the same product runs, with the right values.
  const float v = ops::reduce_sum(ops::matmul(a, b)).item<float>();
  std::printf("workspace oom child: %s; afterwards %g\n", status.c_str(), static_cast<double>(v));
}

TEST_CASE("an out-of-memory in an op's workspace request is ResourceExhausted and the process goes on",
          "[cuda][allocator]") {
  if (!has_gpu()) {
    WARN("no CUDA device (device_count(DeviceType::CUDA) == 0): skipped");
    return;
  }
  const std::string out = limits_child("", "workspace oom child");
  INFO(out);
  CHECK(has(out, "workspace oom child: ResourceExhausted: "));
  CHECK(has(out, "; afterwards 262144"));  // 64 * 64 entries of 64
}

TEST_CASE("memory growth child", "[.]") {
  const Device gpu = Device::cuda(0);
  const Tensor t = Tensor::empty({64 * kMiB / 4}, DType::Float32, gpu);
  const MemoryInfo m = config::memory_info(gpu);
  std::printf("memory growth child: growth %d, reserved %lld MiB\n", config::get_memory_growth(gpu) ? 1 : 0,
              static_cast<long long>(m.bytes_reserved / kMiB));
}

TEST_CASE("TF_FORCE_GPU_ALLOW_GROWTH=true turns memory growth on: the allocator holds what it needs",
          "[cuda][allocator]") {
  if (!has_gpu()) {
    WARN("no CUDA device (device_count(DeviceType::CUDA) == 0): skipped");
    return;
  }
  const std::string grown = limits_child("TF_FORCE_GPU_ALLOW_GROWTH=true", "memory growth child");
  INFO(grown);
  REQUIRE(has(grown, "memory growth child: growth 1, reserved "));
  const long long reserved = std::stoll(grown.substr(grown.find("reserved ") + 9));
  CHECK(reserved >= 64);
  CHECK(reserved < 256);
  // Without it, the first allocation reserves most of the device, as TF does.
  const std::string whole = limits_child("", "memory growth child");
  INFO(whole);
  REQUIRE(has(whole, "memory growth child: growth 0, reserved "));
  CHECK(std::stoll(whole.substr(whole.find("reserved ") + 9)) > reserved);
}

TEST_CASE("large tensor child", "[.]") {
  const Device gpu = Device::cuda(0);
  DeviceScope on(gpu);
  const int64_t n = (int64_t{1} << 31) + 4096;  // past every 32-bit index and element count
  try {
    // n - 1 ones and a last 3, doubled: an elementwise op and a concatenation over all n elements.
    Tensor x = ops::concat({ops::ones({n - 1}, DType::Float16), ops::full({1}, 3.0, DType::Float16)}, 0);
    const Tensor y = ops::mul(x, Tensor::scalar_of(2.0, DType::Float16, Device::cpu()));
    x = Tensor();
    const Tensor tail = ops::cast(ops::slice(y, {n - 3}, {3}), DType::Float32).to(Device::cpu());
    const float max = ops::cast(ops::reduce_max(y), DType::Float32).item<float>();
    const float mean = ops::cast(ops::reduce_mean(y), DType::Float32).item<float>();
    std::printf("large tensor child: tail %g %g %g, max %g, mean %g\n", static_cast<double>(tail.data<float>()[0]),
                static_cast<double>(tail.data<float>()[1]), static_cast<double>(tail.data<float>()[2]),
                static_cast<double>(max), static_cast<double>(mean));
  } catch (const ResourceExhausted& e) {
    std::printf("large tensor child: skipped (too little GPU memory: %s)\n", e.what());
  }
}

TEST_CASE("a tensor of more than 2^31 elements through an elementwise op, a concatenation and reductions",
          "[cuda][large]") {
  if (!has_gpu()) {
    WARN("no CUDA device (device_count(DeviceType::CUDA) == 0): skipped");
    return;
  }
  const std::string out = limits_child("", "large tensor child");
  INFO(out);
  if (has(out, "large tensor child: skipped")) {
    WARN(out);
    return;
  }
  CHECK(has(out, "large tensor child: tail 2 2 6, max 6, mean 2\n"));
}
