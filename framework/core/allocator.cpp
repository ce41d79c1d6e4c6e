#include "framework/core/allocator.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "framework/core/error.h"

namespace ember {

namespace {

constexpr size_t kAlignment = 64;

class CpuAllocator final : public Allocator {
 public:
  void* allocate(size_t bytes) override {
    size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    if (rounded == 0) rounded = kAlignment;
    void* p = std::aligned_alloc(kAlignment, rounded);
    if (!p)
      throw make_error<ResourceExhausted>("cpu allocator: could not allocate ", bytes, " bytes (",
                                          in_use_.load(), " bytes in use)");
    int64_t now = in_use_.fetch_add(static_cast<int64_t>(bytes)) + static_cast<int64_t>(bytes);
    count_.fetch_add(1, std::memory_order_relaxed);
    int64_t peak = peak_.load(std::memory_order_relaxed);
    while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
    return p;
  }
  void deallocate(void* ptr, size_t bytes) override {
    std::free(ptr);
    in_use_.fetch_sub(static_cast<int64_t>(bytes));
  }
  MemoryInfo memory_info() const override {
    MemoryInfo m;
    m.bytes_in_use = in_use_.load();
    m.peak_bytes = peak_.load();
    m.allocation_count = count_.load();
    m.bytes_reserved = m.bytes_in_use;
    return m;
  }
  void reset_peak() override { peak_.store(in_use_.load()); }
  Device device() const override { return Device::cpu(); }

 private:
  std::atomic<int64_t> in_use_{0}, peak_{0}, count_{0};
};

struct Backend {
  Allocator* (*factory)(int) = nullptr;
  int (*count)() = nullptr;
  std::vector<Allocator*> allocators;
};

Backend& backend(DeviceType t) {
  static Backend backends[kNumDeviceTypes];
  return backends[static_cast<int>(t)];
}

}  // namespace

void register_allocator(DeviceType type, Allocator* (*factory)(int), int (*count)()) {
  backend(type).factory = factory;
  backend(type).count = count;
}

int device_count(DeviceType type) {
  if (type == DeviceType::CPU) return 1;
  Backend& b = backend(type);
  return b.count ? b.count() : 0;
}

Allocator& allocator_for(Device device) {
  if (device.is_cpu()) {
    static CpuAllocator cpu;
    EMBER_CHECK(device.index() == 0, InvalidArgument) << "device " << device << " does not exist (only cpu:0)";
    return cpu;
  }
  Backend& b = backend(device.type());
  int n = device_count(device.type());
  EMBER_CHECK(device.index() >= 0 && device.index() < n, InvalidArgument)
      << "device " << device << " does not exist (" << n << " CUDA device(s) visible"
      << (b.count ? "" : "; Ember was built without CUDA") << ")";
  EMBER_CHECK(b.factory, Unimplemented) << "device " << device << ": this build of Ember has no allocator for it yet";
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  if (b.allocators.size() < static_cast<size_t>(n)) b.allocators.resize(static_cast<size_t>(n), nullptr);
  Allocator*& a = b.allocators[static_cast<size_t>(device.index())];
  if (!a) a = b.factory(device.index());
  return *a;
}

void Allocator::copy_to_host(void* host_dst, const void* src, size_t bytes) const {
  if (bytes) std::memcpy(host_dst, src, bytes);
}

void Allocator::copy_from_host(void* dst, const void* host_src, size_t bytes) const {
  if (bytes) std::memcpy(dst, host_src, bytes);
}

Storage::Storage(size_t bytes, Device device)
    : allocator_(&allocator_for(device)), data_(allocator_->allocate(bytes)), bytes_(bytes) {}

Storage::~Storage() { allocator_->deallocate(data_, bytes_); }

}  // namespace ember
