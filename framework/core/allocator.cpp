#include "framework/core/allocator.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <pthread.h>
#include <unordered_map>
#include <vector>

#include "framework/core/error.h"

namespace ember {

namespace {

constexpr size_t kAlignment = 64;

// Blocks below the cached sizes come from malloc with the alignment made by hand, the pointer malloc
// returned kept just below the block. glibc serves aligned_alloc through _int_memalign, which skips its
// per-thread cache and splits a chunk on every call; with the frees and consolidations that follow, that
// was a third of an eager op on a 1-element tensor (bench_dispatch: 396-407 -> 290-301 ns; 32x32: 660-810
// -> 547-555 ns).
void* small_allocate(size_t size) {
  void* raw = std::malloc(size + kAlignment);
  if (!raw) return nullptr;
  // malloc aligns to 16, so the block starts 16 to 64 bytes in: room for the pointer below it.
  const uintptr_t block = (reinterpret_cast<uintptr_t>(raw) + kAlignment) & ~uintptr_t{kAlignment - 1};
  reinterpret_cast<void**>(block)[-1] = raw;
  return reinterpret_cast<void*>(block);
}

void small_free(void* block) { std::free(static_cast<void**>(block)[-1]); }

// Large blocks (from 128 KiB, glibc's initial mmap threshold) are kept for reuse once freed: glibc serves
// them with a fresh mmap each time, and touching fresh pages costs a page fault per 4 KiB, which halved the
// bandwidth of large elementwise ops in bench_elementwise. (From 1 MiB only, the example CNN still faulted
// about 1100 times a step: its 0.4-0.8 MiB batches and activations, and glibc no longer raised its threshold
// because the big blocks were never freed.) Sizes are rounded to classes (8 per power of two, at most 12.5% waste) so
// a freed block fits the next request of its class; the cache holds at most kMaxCached bytes.
// Sanitizer builds skip the cache so that use-after-free stays detectable.
class CpuAllocator final : public Allocator {
 public:
  // The one instance (never destroyed). A fork (io::guarded_read) must not copy the cache's mutex while
  // another thread holds it: the child would block forever on its first large allocation.
  CpuAllocator() {
    static CpuAllocator* self = this;
    pthread_atfork([] { self->mu_.lock(); }, [] { self->mu_.unlock(); }, [] { self->mu_.unlock(); });
  }
  void* allocate(size_t bytes) override {
    size_t size = block_size(bytes);
    void* p = take_cached(size);
    if (!p) p = fresh_block(size);
    if (!p) {
      release_cache();
      p = fresh_block(size);
    }
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
    in_use_.fetch_sub(static_cast<int64_t>(bytes));
    size_t size = block_size(bytes);
    if (kCacheEnabled && size >= kLargeBlock) {
      std::lock_guard<std::mutex> lock(mu_);
      if (cached_bytes_ + size <= kMaxCached) {
        free_[size].push_back(ptr);
        cached_bytes_ += size;
        return;
      }
    }
    free_block(ptr, size);
  }
  MemoryInfo memory_info() const override {
    MemoryInfo m;
    m.bytes_in_use = in_use_.load();
    m.peak_bytes = peak_.load();
    m.allocation_count = count_.load();
    std::lock_guard<std::mutex> lock(mu_);
    m.bytes_reserved = m.bytes_in_use + static_cast<int64_t>(cached_bytes_);
    return m;
  }
  void reset_peak() override { peak_.store(in_use_.load()); }
  Device device() const override { return Device::cpu(); }

 private:
#if defined(__SANITIZE_ADDRESS__)
  static constexpr bool kCacheEnabled = false;
#else
  static constexpr bool kCacheEnabled = true;
#endif
  static constexpr size_t kLargeBlock = size_t{1} << 17;
  static constexpr size_t kMaxCached = size_t{1} << 30;

  static size_t block_size(size_t bytes) {
    size_t rounded = std::max(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
    if (rounded < kLargeBlock) return rounded;
    size_t step = std::bit_floor(rounded) / 8;
    return (rounded + step - 1) / step * step;
  }
  // Where a block of a given (rounded) size comes from and goes back to.
  static void* fresh_block(size_t size) {
    return size < kLargeBlock ? small_allocate(size) : std::aligned_alloc(kAlignment, size);
  }
  static void free_block(void* ptr, size_t size) {
    if (size < kLargeBlock)
      small_free(ptr);
    else
      std::free(ptr);
  }
  void* take_cached(size_t size) {
    if (!kCacheEnabled || size < kLargeBlock) return nullptr;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.find(size);
    if (it == free_.end() || it->second.empty()) return nullptr;
    void* p = it->second.back();
    it->second.pop_back();
    cached_bytes_ -= size;
    return p;
  }
  void release_cache() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [size, blocks] : free_)
      for (void* p : blocks) free_block(p, size);
    free_.clear();
    cached_bytes_ = 0;
  }

  std::atomic<int64_t> in_use_{0}, peak_{0}, count_{0};
  mutable std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> free_;
  size_t cached_bytes_ = 0;
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
    // Never destroyed: tensors held in other statics may be freed after any static destructor ran.
    static CpuAllocator* cpu = new CpuAllocator;
    EMBER_CHECK(device.index() == 0, InvalidArgument) << "device " << device << " does not exist (only cpu:0)";
    return *cpu;
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

void Allocator::copy_on_device(void* dst, const void* src, size_t bytes) const {
  if (bytes) std::memcpy(dst, src, bytes);
}

void Allocator::set_memory_growth(bool) {
  throw make_error<InvalidArgument>("set_memory_growth: ", device(), " is not a GPU; memory growth applies to GPUs only");
}

void Allocator::set_memory_limit(int64_t) {
  throw make_error<InvalidArgument>("set_memory_limit: ", device(), " is not a GPU; memory limits apply to GPUs only");
}

Storage::Storage(size_t bytes, Device device)
    : allocator_(&allocator_for(device)), data_(allocator_->allocate(bytes)), bytes_(bytes) {}

std::shared_ptr<Storage> Storage::strings(size_t count) {
  auto s = std::make_shared<Storage>(count * sizeof(std::string), Device::cpu());
  std::uninitialized_default_construct_n(static_cast<std::string*>(s->data_), count);
  s->strings_ = count;
  return s;
}

Storage::~Storage() {
  std::destroy_n(static_cast<std::string*>(data_), strings_);
  allocator_->deallocate(data_, bytes_);
}

}  // namespace ember
