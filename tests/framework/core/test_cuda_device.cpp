// The CUDA device as users meet it: default placement and DeviceScope, copies between devices for every
// dtype, the rule on mixing devices in one op, and the GPU allocator (reuse, statistics, out-of-memory).
// [cuda] cases skip without a GPU; the untagged ones check the device configuration API anywhere.
// (config::set_memory_limit / set_memory_growth must come before a device's first allocation, so their
// GPU test lives in test_cuda_memory_limit.cpp, a process of its own.)
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "framework/ember.h"
#include "tests/support/tensor_testing.h"

using namespace ember;

namespace {

constexpr Device kCpu = Device::cpu();
constexpr Device kGpu = Device::cuda(0);

bool has_gpu() { return device_count(DeviceType::CUDA) > 0; }

#define EMBER_CUDA_OR_SKIP()                                                    \
  if (!has_gpu()) {                                                             \
    WARN("no CUDA device (device_count(DeviceType::CUDA) == 0): skipped");      \
    return;                                                                     \
  }

// A CPU tensor of dtype dt holding 0, 1, 2, ... converted (bool: parity), so misplaced elements show.
Tensor counting(const Shape& shape, DType dt) {
  DeviceScope on(kCpu);
  std::vector<double> v = testing::as_dtype_values(dt, testing::iota(shape.num_elements()));
  if (dt == DType::Float16 || dt == DType::BFloat16)
    for (double& x : v) x = std::fmod(x, 256.0);  // whole numbers the half types hold exactly
  if (dt == DType::UInt8)
    for (double& x : v) x = std::fmod(x, 256.0);
  Tensor t = Tensor::from_vector<double>(v, shape, kCpu);
  return dt == DType::Float64 ? t : ops::cast(t, dt);
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  const Tensor ha = a.to(kCpu), hb = b.to(kCpu);
  return ha.dtype() == hb.dtype() && ha.shape() == hb.shape() &&
         std::memcmp(ha.raw_data(), hb.raw_data(), ha.nbytes()) == 0;
}

}  // namespace

// ------------------------------------------------------------------------------------------- anywhere

TEST_CASE("device configuration: CPU memory options are refused, listing GPUs never throws",
          "[device][config][cuda_build]") {
  CHECK_THROWS_AS(config::set_memory_growth(kCpu, true), InvalidArgument);
  CHECK_THROWS_WITH(config::set_memory_growth(kCpu, true), Catch::Contains("cpu:0"));
  CHECK_THROWS_AS(config::set_memory_limit(kCpu, 1 << 20), InvalidArgument);
  std::vector<config::PhysicalDevice> gpus;
  REQUIRE_NOTHROW(gpus = config::list_physical_devices("GPU"));
  CHECK(static_cast<int>(gpus.size()) == device_count(DeviceType::CUDA));
  for (size_t i = 0; i < gpus.size(); ++i) {
    CHECK(gpus[i].device_type == "GPU");
    CHECK(gpus[i].name == "/physical_device:GPU:" + std::to_string(i));
  }
  const std::vector<config::PhysicalDevice> all = config::list_physical_devices();
  REQUIRE(all.size() == gpus.size() + 1);
  CHECK(all[0].name == "/physical_device:CPU:0");
  CHECK_THROWS_AS(config::list_physical_devices("TPU"), InvalidArgument);
  if (!config::is_built_with_cuda()) CHECK(gpus.empty());
}

// ------------------------------------------------------------------------------------------- placement

TEST_CASE("with a GPU, new tensors and ops are placed on cuda:0 by default (as TF)", "[cuda][device]") {
  EMBER_CUDA_OR_SKIP();
  CHECK(default_device() == kGpu);
  CHECK(ops::zeros({2, 3}).device() == kGpu);
  CHECK(random::normal({4}, {.seed = 1}).device() == kGpu);
  CHECK(Tensor::from_vector<float>({1, 2, 3}).device() == kGpu);
  const Tensor y = ops::matmul(ops::ones({2, 3}), ops::ones({3, 2}));
  CHECK(y.device() == kGpu);
  CHECK(y.to_vector<float>() == std::vector<float>{3, 3, 3, 3});
}

TEST_CASE("DeviceScope places new tensors, nests, and ops follow their inputs", "[cuda][device]") {
  EMBER_CUDA_OR_SKIP();
  {
    DeviceScope cpu(kCpu);
    CHECK(default_device() == kCpu);
    const Tensor c = ops::ones({3});
    CHECK(c.device() == kCpu);
    {
      DeviceScope gpu(kGpu);
      CHECK(default_device() == kGpu);
      const Tensor g = ops::ones({3});
      CHECK(g.device() == kGpu);
      CHECK((g + g).device() == kGpu);
      CHECK(ops::range(5).device() == kGpu);
      CHECK(c.to(kGpu).device() == kGpu);
    }
    CHECK(default_device() == kCpu);
    CHECK(ops::ones({3}).device() == kCpu);
    // An op with inputs runs where they are, whatever the scope says.
    const Tensor g = ops::ones({3}).to(kGpu);
    const Tensor s = ops::exp(g);
    CHECK(s.device() == kGpu);
    CHECK(s.to_vector<float>()[0] == Approx(std::exp(1.0f)));
  }
  CHECK_THROWS_AS(DeviceScope(Device::cuda(device_count(DeviceType::CUDA))), InvalidArgument);
}

TEST_CASE("tensor.to(device) round-trips every dtype and shape bit for bit", "[cuda][device]") {
  EMBER_CUDA_OR_SKIP();
  for (DType dt : testing::kAllDTypes)
    for (const Shape& s : std::vector<Shape>{{}, {0}, {3, 5}, {2, 0, 3}, {(1 << 20) + 3}}) {
      INFO(dt << " " << s);
      const Tensor c = counting(s, dt);
      const Tensor g = c.to(kGpu);
      CHECK(g.device() == kGpu);
      CHECK(g.dtype() == dt);
      CHECK(g.shape() == s);
      CHECK(g.to(kGpu).is_same(g));  // already there: no copy
      const Tensor back = g.to(kCpu);
      CHECK(back.device() == kCpu);
      CHECK(same_bytes(back, c));
      CHECK(same_bytes(g.clone(), c));  // a copy on the device
    }
  // Host reads straight from the GPU, and views at an offset.
  const Tensor g = Tensor::from_vector<int64_t>({10, 11, 12, 13, 14, 15}, {3, 2}, kGpu);
  CHECK(g.to_vector<int64_t>() == std::vector<int64_t>{10, 11, 12, 13, 14, 15});
  CHECK(g.slice_rows(1, 3).to_vector<int64_t>() == std::vector<int64_t>{12, 13, 14, 15});
  CHECK(g.slice_rows(2, 3).to(kCpu).to_vector<int64_t>() == std::vector<int64_t>{14, 15});
  CHECK(ops::reduce_sum(g.slice_rows(1, 2)).item<int64_t>() == 25);
  CHECK(Tensor::scalar<bool>(true, kGpu).item<bool>());
  CHECK(Tensor::scalar<double>(2.5, kGpu).item<double>() == 2.5);
}

TEST_CASE("an op mixing a CPU and a GPU tensor names both devices; a 0-d CPU scalar mixes", "[cuda][device]") {
  EMBER_CUDA_OR_SKIP();
  const Tensor c = Tensor::from_vector<float>({1, 2, 3}, kCpu);
  const Tensor g = Tensor::from_vector<float>({4, 5, 6}, kGpu);
  CHECK_THROWS_AS(ops::add(c, g), InvalidArgument);
  CHECK_THROWS_WITH(ops::add(c, g), Catch::Contains("cpu:0") && Catch::Contains("cuda:0"));
  CHECK_THROWS_WITH(ops::matmul(ops::reshape(g, {1, 3}), ops::reshape(c, {3, 1})),
                    Catch::Contains("cpu:0") && Catch::Contains("cuda:0"));
  // A 0-d CPU tensor is a scalar argument: it goes along with the GPU tensor (TF copies such constants).
  const Tensor s = Tensor::scalar<float>(2, kCpu);
  const Tensor y = ops::mul(g, s);
  CHECK(y.device() == kGpu);
  CHECK(y.to_vector<float>() == std::vector<float>{8, 10, 12});
  CHECK((s - g).to_vector<float>() == std::vector<float>{-2, -3, -4});
  CHECK(ops::where(Tensor::scalar<bool>(true, kCpu), g, s).device() == kGpu);
  CHECK((g * 0.5).to_vector<float>() == std::vector<float>{2, 2.5, 3});
  CHECK(ops::clip_by_value(g, 4.5, 5.5).to_vector<float>() == std::vector<float>{4.5, 5, 5.5});
  // A 1-element CPU tensor of rank 1 is not a scalar.
  CHECK_THROWS_AS(ops::add(g, Tensor::from_vector<float>({1}, kCpu)), InvalidArgument);
}

TEST_CASE("an update in place of a 0-d CPU tensor by a GPU op is refused, and the tensor is left alone",
          "[cuda][device]") {
  EMBER_CUDA_OR_SKIP();
  // The variable and its slots are 0-d CPU scalars, the gradient a 0-d GPU tensor: the op runs on the GPU,
  // whose kernel must not write the host buffers (nor a throwaway uploaded copy of them).
  Tensor variable = Tensor::scalar<float>(1, kCpu);
  Tensor momentum = Tensor::scalar<float>(0, kCpu);
  Tensor velocity = Tensor::scalar<float>(0, kCpu);
  const Tensor gradient = Tensor::scalar<float>(0.5f, kGpu);
  CHECK_THROWS_AS(ops::apply_adam_in_place(variable, momentum, velocity, gradient, 0.1, 0.9, 0.999, 1e-7),
                  InvalidArgument);
  CHECK_THROWS_WITH(ops::apply_adam_in_place(variable, momentum, velocity, gradient, 0.1, 0.9, 0.999, 1e-7),
                    Catch::Contains("in place") && Catch::Contains("cpu:0") && Catch::Contains("cuda:0"));
  CHECK(variable.item<float>() == 1);
  CHECK(momentum.item<float>() == 0);
  // Not in place, the same inputs are fine: the scalars are uploaded and the results live on the GPU.
  const ops::AdamUpdate u = ops::apply_adam(variable, momentum, velocity, gradient, 0.1, 0.9, 0.999, 1e-7);
  CHECK(u.variable.device() == kGpu);
}

TEST_CASE("GPU work is asynchronous; host reads synchronise and see every op before them", "[cuda][device]") {
  EMBER_CUDA_OR_SKIP();
  DeviceScope gpu(kGpu);
  Tensor x = ops::zeros({1 << 20});
  for (int i = 0; i < 200; ++i) x = x + 1.0;
  CHECK(ops::reduce_max(x).item<float>() == 200.0f);
  CHECK(ops::reduce_min(x).item<float>() == 200.0f);
  const std::vector<float> v = x.to_vector<float>();
  CHECK(v.front() == 200.0f);
  CHECK(v.back() == 200.0f);
}

// ------------------------------------------------------------------------------------------- allocator

TEST_CASE("the GPU allocator reuses a freed block: reserved bytes stay, the allocation count grows", "[cuda][allocator]") {
  EMBER_CUDA_OR_SKIP();
  const int64_t bytes = 64 << 20;
  { Tensor warm = Tensor::empty({bytes / 4}, DType::Float32, kGpu); }
  allocator_for(kGpu).synchronize();
  const MemoryInfo a = config::memory_info(kGpu);
  { Tensor t = Tensor::empty({bytes / 4}, DType::Float32, kGpu); }
  const MemoryInfo b = config::memory_info(kGpu);
  { Tensor t = Tensor::empty({bytes / 4}, DType::Float32, kGpu); }
  allocator_for(kGpu).synchronize();
  const MemoryInfo c = config::memory_info(kGpu);
  INFO("reserved " << a.bytes_reserved << " -> " << b.bytes_reserved << " -> " << c.bytes_reserved);
  CHECK(b.bytes_reserved == a.bytes_reserved);
  CHECK(c.bytes_reserved == a.bytes_reserved);
  CHECK(b.allocation_count == a.allocation_count + 1);
  CHECK(c.allocation_count == a.allocation_count + 2);
  CHECK(c.bytes_in_use == a.bytes_in_use);
  CHECK(a.bytes_reserved >= a.bytes_in_use);
}

TEST_CASE("GPU memory statistics: bytes in use, peak, reset", "[cuda][allocator]") {
  EMBER_CUDA_OR_SKIP();
  const int64_t bytes = 128 << 20;
  allocator_for(kGpu).synchronize();
  config::reset_memory_stats(kGpu);
  const MemoryInfo before = config::memory_info(kGpu);
  CHECK(before.peak_bytes == before.bytes_in_use);
  {
    const Tensor t = Tensor::empty({bytes / 4}, DType::Float32, kGpu);
    const MemoryInfo during = config::memory_info(kGpu);
    CHECK(during.bytes_in_use >= before.bytes_in_use + bytes);
    CHECK(during.peak_bytes >= during.bytes_in_use);
    CHECK(during.bytes_reserved >= during.bytes_in_use);
  }
  allocator_for(kGpu).synchronize();
  const MemoryInfo after = config::memory_info(kGpu);
  CHECK(after.bytes_in_use == before.bytes_in_use);
  CHECK(after.peak_bytes >= before.bytes_in_use + bytes);
  config::reset_memory_stats(kGpu);
  const MemoryInfo reset = config::memory_info(kGpu);
  CHECK(reset.peak_bytes == reset.bytes_in_use);
}

TEST_CASE("an allocation larger than the GPU is ResourceExhausted, and the device keeps working", "[cuda][allocator]") {
  EMBER_CUDA_OR_SKIP();
  DeviceScope gpu(kGpu);
  const Tensor small = Tensor::from_vector<float>({1, 2, 3});
  allocator_for(kGpu).synchronize();
  const MemoryInfo before = config::memory_info(kGpu);
  const int64_t huge = int64_t{1} << 40;  // 1 TiB
  std::string message;
  try {
    Tensor t = Tensor::empty({huge / 4}, DType::Float32, kGpu);
    FAIL("allocating 1 TiB on the GPU succeeded");
  } catch (const ResourceExhausted& e) {
    message = e.what();
  }
  INFO("message: " << message);
  // The request is named (in bytes or binary units) and the usual remedy suggested.
  CHECK((message.find("1099511627776") != std::string::npos || message.find("TiB") != std::string::npos ||
         message.find("1024 GiB") != std::string::npos || message.find("1024.0 GiB") != std::string::npos));
  CHECK(message.find("batch") != std::string::npos);
  CHECK((message.find("cuda:0") != std::string::npos || message.find("GPU") != std::string::npos));
  // Through an op as well: the output allocation fails the same way.
  CHECK_THROWS_AS(ops::zeros({huge / 4}), ResourceExhausted);
  const MemoryInfo after = config::memory_info(kGpu);
  CHECK(after.bytes_in_use == before.bytes_in_use);
  const Tensor y = small * 2.0 + small;
  CHECK(y.to_vector<float>() == std::vector<float>{3, 6, 9});
  CHECK(ops::reduce_sum(ops::ones({1 << 20})).item<float>() == static_cast<float>(1 << 20));
}

TEST_CASE("GPU memory options after the device's first allocation are refused", "[cuda][allocator]") {
  EMBER_CUDA_OR_SKIP();
  { Tensor t = Tensor::empty({16}, DType::Float32, kGpu); }
  CHECK_THROWS_AS(config::set_memory_growth(kGpu, !config::get_memory_growth(kGpu)), Error);
  CHECK_THROWS_AS(config::set_memory_limit(kGpu, int64_t{1} << 30), Error);
  CHECK_THROWS_AS(config::set_memory_limit(kGpu, 0), InvalidArgument);
  // The allocator is unharmed.
  CHECK(ops::reduce_sum(Tensor::from_vector<float>({1, 2}, kGpu)).item<float>() == 3.0f);
}
