// Core types: DType traits, Shape, Device and DeviceScope, Tensor storage semantics, and ember::config.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <thread>

#include "framework/ember.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using Catch::Contains;

namespace {

struct DTypeRow {
  DType dtype;
  const char* name;
  size_t size;
  bool floating, integer;
};
constexpr DTypeRow kDTypes[] = {
    {DType::Float32, "float32", 4, true, false},  {DType::Float64, "float64", 8, true, false},
    {DType::Float16, "float16", 2, true, false},  {DType::BFloat16, "bfloat16", 2, true, false},
    {DType::Int32, "int32", 4, false, true},      {DType::Int64, "int64", 8, false, true},
    {DType::UInt8, "uint8", 1, false, true},      {DType::Bool, "bool", 1, false, false},
    {DType::String, "string", sizeof(std::string), false, false},
};

// from_vector -> to_vector and item() give the same values back, and the dtype matches T.
template <class T>
void check_round_trip(const std::vector<T>& values, DType dtype) {
  INFO("dtype " << dtype);
  Tensor t = Tensor::from_vector<T>(values, Shape{static_cast<int64_t>(values.size())});
  CHECK(t.dtype() == dtype);
  CHECK(t.shape() == Shape{static_cast<int64_t>(values.size())});
  CHECK(t.nbytes() == values.size() * dtype_size(dtype));
  CHECK(t.to_vector<T>() == values);
  Tensor s = Tensor::scalar<T>(values[1]);
  CHECK(s.rank() == 0);
  CHECK(s.item<T>() == values[1]);
}

}  // namespace

TEST_CASE("DType traits for all nine dtypes", "[core][dtype]") {
  STATIC_REQUIRE(sizeof(kDTypes) / sizeof(kDTypes[0]) == kNumDTypes);
  for (const DTypeRow& row : kDTypes) {
    INFO(row.name);
    CHECK(std::string(dtype_name(row.dtype)) == row.name);
    CHECK(dtype_size(row.dtype) == row.size);
    CHECK(is_floating(row.dtype) == row.floating);
    CHECK(is_integer(row.dtype) == row.integer);
    CHECK(dtype_from_name(row.name) == row.dtype);
    std::ostringstream os;
    os << row.dtype;
    CHECK(os.str() == row.name);
  }
  CHECK(dtype_from_name("float") == DType::Float32);
  CHECK(dtype_from_name("double") == DType::Float64);
  CHECK(dtype_from_name("half") == DType::Float16);
  CHECK(dtype_v<half> == DType::Float16);
  CHECK(dtype_v<bfloat16> == DType::BFloat16);
  CHECK(dtype_v<bool> == DType::Bool);
  STATIC_REQUIRE(std::is_same_v<compute_t<half>, float>);
  STATIC_REQUIRE(std::is_same_v<compute_t<bfloat16>, float>);
  STATIC_REQUIRE(std::is_same_v<compute_t<int32_t>, int32_t>);
}

TEST_CASE("dtype_from_name rejects unknown names", "[core][dtype]") {
  CHECK_THROWS_AS(dtype_from_name("float8"), InvalidArgument);
  CHECK_THROWS_WITH(dtype_from_name("float8"), Contains("dtype_from_name") && Contains("float8"));
  CHECK_THROWS_AS(dtype_from_name(""), InvalidArgument);
  CHECK_THROWS_AS(dtype_from_name("Float32"), InvalidArgument);  // TF spellings are lower case
}

TEST_CASE("Shape", "[core][shape]") {
  CHECK(Shape{}.num_elements() == 1);
  CHECK(Shape{5}.num_elements() == 5);
  CHECK(Shape{2, 3, 4}.num_elements() == 24);
  CHECK(Shape{2, 0, 4}.num_elements() == 0);
  CHECK(Shape{}.to_string() == "()");
  CHECK(Shape{5}.to_string() == "(5,)");
  CHECK(Shape{2, 3}.to_string() == "(2, 3)");
  std::ostringstream os;
  os << Shape{0, 7};
  CHECK(os.str() == "(0, 7)");
  CHECK(Shape{2, 3, 4}.strides() == std::vector<int64_t>{12, 4, 1});
  CHECK(Shape{2, 3, 4}.rank() == 3);
  CHECK(Shape{2, 3, 4}.dim(-1) == 4);
  CHECK(Shape{2, 3, 4}.dim(0) == 2);
  CHECK(Shape{2, 3} == Shape(std::vector<int64_t>{2, 3}));
  CHECK(Shape{2, 3} != Shape{3, 2});
  CHECK_THROWS_AS((Shape{2, 3}.dim(2)), InvalidArgument);
  CHECK(normalize_axis(-1, 3, "myop") == 2);
  CHECK(normalize_axis(-3, 3, "myop") == 0);
  CHECK(normalize_axis(2, 3, "myop") == 2);
  CHECK_THROWS_AS(normalize_axis(3, 3, "myop"), InvalidArgument);
  CHECK_THROWS_WITH(normalize_axis(-4, 3, "myop"), Contains("myop") && Contains("-4") && Contains("rank 3"));
  CHECK_THROWS_AS(normalize_axis(0, 0, "myop"), InvalidArgument);
}

TEST_CASE("Shape: ranks past the inline dimensions", "[core][shape]") {
  // Up to 6 dimensions live in the object, more on the heap: both behave alike through growth and copies.
  Shape s;
  std::vector<int64_t> dims;
  for (int64_t d = 1; d <= 9; ++d) {
    s.push_back(d + 1);
    dims.push_back(d + 1);
    INFO("rank " << d);
    const Shape copy = s;
    CHECK(copy.rank() == d);
    CHECK(copy.dims() == dims);
    CHECK(copy == Shape(dims));
    CHECK(copy.dim(-1) == d + 1);
    CHECK(std::vector<int64_t>(copy.begin(), copy.end()) == dims);
  }
  CHECK(s.num_elements() == 3628800);  // 10! / 1
  CHECK(s.to_string() == "(2, 3, 4, 5, 6, 7, 8, 9, 10)");
  CHECK(s.strides()[0] == 3628800 / 2);
  Shape moved = std::move(s);
  moved[8] = 1;
  CHECK(moved == Shape{2, 3, 4, 5, 6, 7, 8, 9, 1});
  CHECK(moved != Shape{2, 3, 4, 5, 6, 7, 8, 9});
  CHECK(Shape{2, 3, 4, 5, 6, 7} != Shape{2, 3, 4, 5, 6, 7, 1});
  // A tensor of rank 8 round-trips its values.
  Tensor t = Tensor::from_vector<float>(std::vector<float>(256, 1.5f), Shape{2, 2, 2, 2, 2, 2, 2, 2});
  CHECK(t.shape().rank() == 8);
  CHECK(t.view(Shape{256}).to_vector<float>() == std::vector<float>(256, 1.5f));
}

TEST_CASE("Device and DeviceScope", "[core][device]") {
  CHECK(Device::cpu().to_string() == "cpu:0");
  CHECK(Device::cuda(1).to_string() == "cuda:1");
  CHECK(Device::cpu().is_cpu());
  CHECK(Device::cuda(0).is_cuda());
  CHECK(Device::cuda(0) != Device::cpu());
  CHECK(default_device() == Device::cpu());
  {
    DeviceScope outer(Device::cpu());
    {
      DeviceScope inner(Device::cpu());
      CHECK(default_device() == Device::cpu());
    }
    CHECK(default_device() == Device::cpu());
  }
  CHECK_THROWS_AS(DeviceScope(Device(DeviceType::CPU, 1)), InvalidArgument);
  if (device_count(DeviceType::CUDA) == 0) {
    CHECK_THROWS_AS(DeviceScope(Device::cuda(0)), InvalidArgument);
    CHECK_THROWS_WITH(DeviceScope(Device::cuda(0)), Contains("cuda:0"));
    CHECK_THROWS_AS(Tensor::empty({2}, DType::Float32, Device::cuda(0)), InvalidArgument);
  } else {
    DeviceScope gpu(Device::cuda(0));
    CHECK(default_device() == Device::cuda(0));
    {
      DeviceScope cpu(Device::cpu());
      CHECK(default_device() == Device::cpu());
    }
    CHECK(default_device() == Device::cuda(0));
  }
  CHECK(default_device() == Device::cpu());  // a failed scope changes nothing
  // The scope is per thread.
  DeviceScope here(Device::cpu());
  Device seen;
  std::thread([&] { seen = default_device(); }).join();
  CHECK(seen == Device::cpu());
}

TEST_CASE("Tensor round trips for every dtype", "[core][tensor]") {
  check_round_trip<float>({1.5f, -2.0f, 3.25f}, DType::Float32);
  check_round_trip<double>({1e300, -0.1, 3.0}, DType::Float64);
  check_round_trip<half>({half(1.5f), half(-65504.0f), half(0.099975586f)}, DType::Float16);
  check_round_trip<bfloat16>({bfloat16(1.5f), bfloat16(-3e38f), bfloat16(0.5f)}, DType::BFloat16);
  check_round_trip<int32_t>({INT32_MIN, 0, INT32_MAX}, DType::Int32);
  check_round_trip<int64_t>({INT64_MIN, 9007199254740993LL, INT64_MAX}, DType::Int64);
  check_round_trip<uint8_t>({0, 128, 255}, DType::UInt8);
  check_round_trip<bool>({true, false, true}, DType::Bool);
  Tensor m = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(m.shape() == Shape{2, 3});
  CHECK(m.rank() == 2);
  CHECK(m.num_elements() == 6);
  CHECK(m.device() == Device::cpu());
  CHECK(m.data<float>()[4] == 5.0f);
  for (const DTypeRow& row : kDTypes) {
    if (row.dtype == DType::String) continue;  // no number converts to a string (test_string_tensor)
    Tensor s = Tensor::scalar_of(1.0, row.dtype);
    CHECK(s.dtype() == row.dtype);
    CHECK(ember::testing::values_as_double(s) == std::vector<double>{1.0});
  }
}

TEST_CASE("Tensor access errors", "[core][tensor]") {
  Tensor t = Tensor::from_vector<float>({1, 2, 3});
  CHECK_THROWS_AS(t.to_vector<double>(), InvalidArgument);
  CHECK_THROWS_WITH(t.to_vector<int32_t>(), Contains("to_vector") && Contains("float32") && Contains("int32"));
  CHECK_THROWS_AS(t.data<half>(), InvalidArgument);
  CHECK_THROWS_AS(t.item<float>(), InvalidArgument);
  CHECK_THROWS_WITH(t.item<float>(), Contains("item") && Contains("(3,)"));
  CHECK_THROWS_AS(Tensor::from_vector<float>({1, 2, 3}, {2, 2}), InvalidArgument);
  CHECK_THROWS_WITH(Tensor::from_vector<float>({1, 2, 3}, {2, 2}), Contains("from_vector") && Contains("(2, 2)"));
  CHECK_THROWS_AS(Tensor::empty({2, -1}, DType::Float32), InvalidArgument);
  Tensor undefined;
  CHECK_FALSE(undefined.defined());
  CHECK(t.defined());
  CHECK_THROWS_AS(undefined.shape(), FailedPrecondition);
  CHECK_THROWS_AS(undefined.dtype(), FailedPrecondition);
  CHECK_THROWS_AS(undefined.to_vector<float>(), FailedPrecondition);
  CHECK_THROWS_AS(undefined.clone(), FailedPrecondition);
  CHECK_THROWS_WITH(undefined.num_elements(), Contains("undefined"));
}

TEST_CASE("Tensor view, slice_rows and clone", "[core][tensor]") {
  Tensor t = Tensor::from_vector<int32_t>({0, 1, 2, 3, 4, 5}, {3, 2});
  Tensor v = t.view({6});
  CHECK(v.shape() == Shape{6});
  CHECK(v.storage() == t.storage());
  CHECK_FALSE(v.is_same(t));
  t.data<int32_t>()[0] = 42;  // writes through the shared storage
  CHECK(v.to_vector<int32_t>()[0] == 42);
  CHECK_THROWS_AS(t.view({4}), InvalidArgument);
  CHECK_THROWS_WITH(t.view({5}), Contains("view"));

  Tensor rows = t.slice_rows(1, 3);
  CHECK(rows.shape() == Shape{2, 2});
  CHECK(rows.to_vector<int32_t>() == std::vector<int32_t>{2, 3, 4, 5});
  CHECK(rows.storage() == t.storage());
  CHECK(t.slice_rows(2, 2).shape() == Shape{0, 2});
  CHECK_THROWS_AS(t.slice_rows(2, 4), InvalidArgument);
  CHECK_THROWS_AS(t.slice_rows(2, 1), InvalidArgument);
  CHECK_THROWS_AS(Tensor::scalar<float>(1).slice_rows(0, 1), InvalidArgument);

  Tensor c = t.clone();
  CHECK(c.storage() != t.storage());
  c.data<int32_t>()[1] = -7;
  CHECK(t.to_vector<int32_t>()[1] == 1);
  CHECK(c.to_vector<int32_t>() == std::vector<int32_t>{42, -7, 2, 3, 4, 5});
  CHECK(rows.clone().to_vector<int32_t>() == std::vector<int32_t>{2, 3, 4, 5});  // a slice clones its rows only
  CHECK(Tensor::empty({0, 4}, DType::Float32).clone().shape() == Shape{0, 4});
  CHECK(t.to(Device::cpu()).is_same(t));
}

TEST_CASE("memory_info tracks the CPU allocator", "[core][config]") {
  const MemoryInfo before = config::memory_info(Device::cpu());
  {
    Tensor a = Tensor::empty({1000}, DType::Float32);
    Tensor b = Tensor::empty({10}, DType::Float64);
    const MemoryInfo during = config::memory_info(Device::cpu());
    CHECK(during.bytes_in_use - before.bytes_in_use == 4080);
    CHECK(during.allocation_count - before.allocation_count == 2);
    CHECK(during.peak_bytes >= during.bytes_in_use);
    CHECK(during.bytes_reserved >= during.bytes_in_use);  // plus freed blocks kept for reuse
    Tensor view = a.view({10, 100});  // views allocate nothing
    CHECK(config::memory_info(Device::cpu()).allocation_count == during.allocation_count);
  }
  const MemoryInfo after = config::memory_info(Device::cpu());
  CHECK(after.bytes_in_use == before.bytes_in_use);
  CHECK(after.peak_bytes >= before.bytes_in_use + 4080);
  config::reset_memory_stats(Device::cpu());
  CHECK(config::memory_info(Device::cpu()).peak_bytes == after.bytes_in_use);
  {
    Tensor big = Tensor::empty({1 << 20}, DType::UInt8);
    CHECK(config::memory_info(Device::cpu()).peak_bytes == after.bytes_in_use + (1 << 20));
  }
  CHECK(config::memory_info(Device::cpu()).bytes_in_use == after.bytes_in_use);
}

TEST_CASE("freed CPU blocks from 128 KiB up are kept for reuse", "[core][config]") {
#if defined(__SANITIZE_ADDRESS__)
  WARN("AddressSanitizer build: the allocator frees every block at once so that use-after-free is caught");
#else
  // glibc maps blocks from 128 KiB afresh on every allocation (a page fault per 4 KiB touched); the
  // allocator keeps them instead, so that training steps reuse their activations' and scratchpads' memory.
  for (int64_t bytes : {int64_t{200000}, int64_t{3} << 20}) {
    auto kept = [] {
      const MemoryInfo m = config::memory_info(Device::cpu());
      return m.bytes_reserved - m.bytes_in_use;
    };
    const int64_t kept_before = kept();
    { Tensor a = Tensor::empty({bytes}, DType::UInt8); }
    CHECK(kept() >= kept_before + bytes);
    Tensor again = Tensor::empty({bytes}, DType::UInt8);  // takes the kept block back
    CHECK(kept() == kept_before);
  }
#endif
}

TEST_CASE("tensor data is 64-byte aligned", "[core][config]") {
  for (int64_t n : {1, 3, 17, 64, 1000, 4097}) {
    for (DType t : {DType::UInt8, DType::Float32, DType::Float64}) {
      Tensor x = Tensor::empty({n}, t);
      CHECK(reinterpret_cast<uintptr_t>(x.raw_data()) % 64 == 0);
    }
  }
  CHECK(reinterpret_cast<uintptr_t>(Tensor::empty({0}, DType::Float32).raw_data()) % 64 == 0);
}

TEST_CASE("blocks of every allocator path hold their whole extent, aligned and apart", "[core][config]") {
  // Small blocks come from malloc with a hand-made alignment and the malloc pointer stored below them;
  // from 128 KiB the cached path takes over. Sizes straddle both limits.
  const std::vector<int64_t> sizes = {1, 63, 64, 65, 900, 960, 961, 1024, 4096, 131007, 131008, 131009, 200000};
  for (int round = 0; round < 2; ++round) {
    std::vector<Tensor> blocks;
    for (size_t i = 0; i < sizes.size(); ++i) {
      blocks.push_back(Tensor::empty({sizes[i]}, DType::UInt8));
      CHECK(reinterpret_cast<uintptr_t>(blocks.back().raw_data()) % 64 == 0);
      std::memset(blocks.back().raw_data(), static_cast<int>(i + 1), static_cast<size_t>(sizes[i]));
    }
    for (size_t i = 0; i < sizes.size(); ++i) {
      const auto* p = static_cast<const uint8_t*>(blocks[i].raw_data());
      CHECK(std::all_of(p, p + sizes[i], [&](uint8_t b) { return b == i + 1; }));
    }
    // Freed out of allocation order, then allocated again in the next round.
    for (size_t i = 0; i < blocks.size(); i += 2) blocks[i] = Tensor();
  }
}

TEST_CASE("config threads, devices and determinism", "[core][config]") {
  const int saved = config::get_intra_op_parallelism_threads();
  CHECK(saved >= 1);
  config::set_intra_op_parallelism_threads(1);
  CHECK(config::get_intra_op_parallelism_threads() == 1);
  config::set_intra_op_parallelism_threads(3);
  CHECK(config::get_intra_op_parallelism_threads() == 3);
  config::set_intra_op_parallelism_threads(0);  // 0 = hardware threads
  CHECK(config::get_intra_op_parallelism_threads() == static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  CHECK_THROWS_AS(config::set_intra_op_parallelism_threads(-1), InvalidArgument);
  config::set_intra_op_parallelism_threads(saved);
  CHECK(config::get_intra_op_parallelism_threads() == saved);

  std::vector<config::PhysicalDevice> cpus = config::list_physical_devices("CPU");
  REQUIRE(cpus.size() == 1);
  CHECK(cpus[0].name == "/physical_device:CPU:0");
  CHECK(cpus[0].device_type == "CPU");
  std::vector<config::PhysicalDevice> gpus = config::list_physical_devices("GPU");
  CHECK(static_cast<int>(gpus.size()) == device_count(DeviceType::CUDA));
  for (size_t i = 0; i < gpus.size(); ++i) CHECK(gpus[i].name == "/physical_device:GPU:" + std::to_string(i));
  CHECK(config::list_physical_devices().size() == 1 + gpus.size());
  CHECK_THROWS_AS(config::list_physical_devices("TPU"), InvalidArgument);
  CHECK_THROWS_WITH(config::list_physical_devices("gpu"), Contains("list_physical_devices") && Contains("gpu"));

  CHECK_FALSE(config::is_op_determinism_enabled());
  config::enable_op_determinism();
  CHECK(config::is_op_determinism_enabled());
}
