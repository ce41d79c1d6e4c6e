// The caching allocator of each CUDA device (PyTorch's CUDACachingAllocator and TF's BFC allocator in
// spirit): memory comes from the driver in segments, is cut into blocks, and freed blocks return to a
// best-fit pool, coalescing with free neighbours, instead of going back to cudaFree (which synchronises
// the whole device). Blocks remember the stream they were used on and are reused only on it; every op
// of a device runs on its one compute stream, so a block freed by the host while kernels that use it
// are still queued is safe to hand to the next op: that op is queued behind them.
//
// As in PyTorch's allocator, small requests (up to 1 MiB) and large ones come from separate pools of
// separate segments, so a long-lived small block never pins a hole in a large segment: small blocks are cut
// from 2 MiB segments of their own. Without memory growth (TF's default) the first allocation reserves most
// of the device's free memory as one large segment, and a small segment is carved out of the large pool
// (and handed back to it once wholly free); with growth, segments are taken on demand (2 MiB for small
// requests, the rounded size for large ones) and, when the driver refuses, unused cached segments are
// released and the request retried. Host copies go through pinned staging buffers.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "framework/core/allocator.h"
#include "framework/core/error.h"
#include "framework/core/logging.h"
#include "framework/ops/cuda/cuda_capture.h"
#include "framework/ops/cuda/cuda_runtime.h"
#include "framework/ops/dispatch.h"

namespace ember {
namespace {

constexpr size_t kCudaAlign = 512;
constexpr size_t kSmallRequest = size_t{1} << 20;   // requests up to 1 MiB share 2 MiB segments
constexpr size_t kSmallSegment = size_t{2} << 20;
constexpr size_t kLargeRound = size_t{2} << 20;      // large requests round to 2 MiB
constexpr double kReserveFraction = 0.9;              // of the free memory, without growth
constexpr size_t kStagingChunk = size_t{8} << 20;
constexpr int kStagingSlots = 4;

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && (std::strcmp(v, "1") == 0 || std::strcmp(v, "true") == 0 || std::strcmp(v, "TRUE") == 0);
}

std::string mib(int64_t bytes) { return std::to_string(bytes / (1 << 20)) + " MiB"; }

class CudaAllocator final : public Allocator {
 public:
  explicit CudaAllocator(int device) : device_(device), growth_(env_flag("TF_FORCE_GPU_ALLOW_GROWTH")) {}

  void* allocate(size_t bytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    cuda::activate(device_);
    started_ = true;
    cudaStream_t s = cuda::stream(device_);
    size_t size = block_size(bytes);
    const bool small = size <= kSmallRequest;
    const cudaStream_t pool = t_pool.device == device_ ? t_pool.key : nullptr;
    Block* b = pool ? take_free(size, pool, small) : nullptr;
    if (b) {
      split(b, size);
    } else {
      b = take_free(size, s, small);
      if (!b) b = grow(size, s, bytes, small);
      split(b, size);
      // Cut from the shared cache: the rest stays there, this block joins the pool.
      if (pool) b->stream = pool;
    }
    b->allocated = true;
    in_use_ += static_cast<int64_t>(b->size);
    peak_ = std::max(peak_, in_use_);
    ++count_;
    live_.emplace(b->ptr, b);
    return b->ptr;
  }

  void deallocate(void* ptr, size_t) override {
    if (!ptr) return;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(ptr);
    if (it == live_.end()) return;  // never ours: ignore rather than corrupt the pool
    Block* b = it->second;
    live_.erase(it);
    b->allocated = false;
    in_use_ -= static_cast<int64_t>(b->size);
    if (is_pool(b->stream) && !pools_.count(b->stream)) b->stream = cuda::stream(device_);  // its pool is gone
    b = merge(b, b->prev);
    b = merge(b, b->next);
    // (Not a pool's: its freed blocks stay its own, the graph's kernels use them.)
    auto carved = b->small && !b->prev && !b->next && !is_pool(b->stream) ? carved_.find(b->ptr) : carved_.end();
    if (carved != carved_.end()) {
      // A wholly free small segment carved out of the large pool goes back to it.
      Block* host = carved->second;
      carved_.erase(carved);
      delete b;
      host->allocated = false;
      b = merge(host, host->prev);
      b = merge(b, b->next);
    }
    pool(b->small).insert(b);
  }

  MemoryInfo memory_info() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return MemoryInfo{in_use_, peak_, count_, reserved_, system_allocations_.load()};
  }
  void reset_peak() override {
    std::lock_guard<std::mutex> lock(mu_);
    peak_ = in_use_;
  }
  Device device() const override { return Device::cuda(device_); }

  // Copies enqueue under the device's enqueue lock, as ops do: a CUDA graph capture on another thread holds it,
  // and the copy must not join the captured stream.
  void copy_to_host(void* host_dst, const void* src, size_t bytes) const override {
    if (!bytes) return;
    std::lock_guard<std::recursive_mutex> enqueue(detail::device_enqueue_mutex(device()));
    std::lock_guard<std::mutex> lock(staging_mu_);
    cuda::activate(device_);
    cudaStream_t s = cuda::stream(device_);
    char* out = static_cast<char*>(host_dst);
    const char* in = static_cast<const char*>(src);
    for (size_t done = 0; done < bytes; done += kStagingChunk) {
      size_t n = std::min(kStagingChunk, bytes - done);
      Staging& st = staging(0);
      cuda::wait_event(device_, st.ready, "copy to host");
      EMBER_CUDA_CHECK(cudaMemcpyAsync(st.buf, in + done, n, cudaMemcpyDeviceToHost, s), "copy to host");
      // Synchronising the stream also reports any fault of an earlier op: host reads are sync points.
      cuda::synchronize(device_, "copy to host (a host read waits for the ops queued before it)");
      std::memcpy(out + done, st.buf, n);
    }
  }

  // Returns once the data sits in pinned staging memory; the transfer itself runs on the stream.
  void copy_from_host(void* dst, const void* host_src, size_t bytes) const override {
    if (!bytes) return;
    std::lock_guard<std::recursive_mutex> enqueue(detail::device_enqueue_mutex(device()));
    std::lock_guard<std::mutex> lock(staging_mu_);
    cuda::activate(device_);
    cudaStream_t s = cuda::stream(device_);
    char* out = static_cast<char*>(dst);
    const char* in = static_cast<const char*>(host_src);
    for (size_t done = 0; done < bytes; done += kStagingChunk) {
      size_t n = std::min(kStagingChunk, bytes - done);
      Staging& st = staging(next_slot_);
      next_slot_ = (next_slot_ + 1) % kStagingSlots;
      cuda::wait_event(device_, st.ready, "copy from host");  // the slot's previous transfer is done
      std::memcpy(st.buf, in + done, n);
      EMBER_CUDA_CHECK(cudaMemcpyAsync(out + done, st.buf, n, cudaMemcpyHostToDevice, s), "copy from host");
      EMBER_CUDA_CHECK(cudaEventRecord(st.ready, s), "copy from host");
    }
  }

  void copy_on_device(void* dst, const void* src, size_t bytes) const override {
    if (!bytes) return;
    std::lock_guard<std::recursive_mutex> enqueue(detail::device_enqueue_mutex(device()));
    cuda::activate(device_);
    EMBER_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, cuda::stream(device_)),
                     "copy on device");
  }

  void synchronize() const override { cuda::synchronize(device_, "synchronize"); }

  // Private pools (CUDA graphs): a pool is a key standing where a block's stream is, so best fit and
  // coalescing keep its blocks apart from the shared cache's. Keys are odd numbers, never a stream's address.
  cudaStream_t new_pool() {
    std::lock_guard<std::mutex> lock(mu_);
    const auto key = reinterpret_cast<cudaStream_t>(static_cast<uintptr_t>(2 * ++pool_count_ + 1));
    pools_.insert(key);
    return key;
  }

  void release_pool(cudaStream_t key) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!pools_.erase(key)) return;
    // Free blocks go back to the shared cache (blocks still allocated follow when freed).
    const cudaStream_t s = cuda::stream(device_);
    // One block at a time, as deallocate() does: merging deletes neighbours, so look again after each.
    for (;;) {
      Block* b = nullptr;
      for (const auto* blocks : {&small_free_, &large_free_})
        for (Block* f : *blocks)
          if (f->stream == key) b = f;
      if (!b) return;
      pool(b->small).erase(b);
      b->stream = s;
      b = merge(b, b->prev);
      b = merge(b, b->next);
      pool(b->small).insert(b);
    }
  }

  static void set_thread_pool(int device, cudaStream_t key) { t_pool = {key ? device : -1, key}; }
  int64_t host_synchronizations() const override { return cuda::host_sync_count(device_); }

  void set_memory_growth(bool enable) override {
    std::lock_guard<std::mutex> lock(mu_);
    check_not_started("set_memory_growth");
    growth_ = enable;
  }
  bool memory_growth() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return growth_;
  }
  void set_memory_limit(int64_t bytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    check_not_started("set_memory_limit");
    limit_ = static_cast<size_t>(bytes);
  }

 private:
  struct Block {
    char* ptr;
    size_t size;
    cudaStream_t stream;
    bool small = false;     // its segment's pool: every block of a segment is in the same one
    bool allocated = false;
    Block* prev = nullptr;  // neighbours within the same segment
    Block* next = nullptr;
  };
  struct BySize {
    bool operator()(const Block* a, const Block* b) const {
      if (a->stream != b->stream) return a->stream < b->stream;
      if (a->size != b->size) return a->size < b->size;
      return a->ptr < b->ptr;
    }
  };
  struct Staging {
    void* buf = nullptr;
    cudaEvent_t ready = nullptr;
  };

  static bool is_pool(cudaStream_t key) { return reinterpret_cast<uintptr_t>(key) & 1; }

  static size_t block_size(size_t bytes) {
    size_t n = round_up(std::max<size_t>(bytes, 1), kCudaAlign);
    return n <= kSmallRequest ? n : round_up(n, kLargeRound);
  }

  void check_not_started(const char* what) const {
    EMBER_CHECK(!started_, FailedPrecondition)
        << what << ": " << device() << " has already allocated memory; call it before the device's first use "
        << "(as tf.config requires)";
  }

  std::set<Block*, BySize>& pool(bool small) { return small ? small_free_ : large_free_; }

  // Best fit among the pool's free blocks of the stream.
  Block* take_free(size_t size, cudaStream_t s, bool small) {
    std::set<Block*, BySize>& blocks = pool(small);
    Block key{nullptr, size, s};
    auto it = blocks.lower_bound(&key);
    if (it == blocks.end() || (*it)->stream != s) return nullptr;
    Block* b = *it;
    blocks.erase(it);
    return b;
  }

  // Cuts `size` off the front of b; the rest goes back to the pool (if worth keeping apart).
  void split(Block* b, size_t size) {
    size_t rest = b->size - size;
    if (rest < kCudaAlign) return;
    Block* r = new Block{b->ptr + size, rest, b->stream};
    r->small = b->small;
    r->prev = b;
    r->next = b->next;
    if (b->next) b->next->prev = r;
    b->next = r;
    b->size = size;
    pool(r->small).insert(r);
  }

  // Merges free neighbour n into b (or b into n); returns the surviving block.
  Block* merge(Block* b, Block* n) {
    if (!n || n->allocated || n->stream != b->stream || n->small != b->small) return b;
    pool(n->small).erase(n);
    Block* first = n == b->prev ? n : b;
    Block* second = first == b ? n : b;
    first->size += second->size;
    first->next = second->next;
    if (second->next) second->next->prev = first;
    delete second;
    return first;
  }

  size_t cap() {
    if (limit_) return limit_;
    return SIZE_MAX;
  }

  Block* new_segment(size_t bytes, cudaStream_t s) {
    if (reserved_ + static_cast<int64_t>(bytes) > static_cast<int64_t>(std::min(cap(), size_t(INT64_MAX))))
      return nullptr;
    void* p = nullptr;
    cudaError_t err = cudaMalloc(&p, bytes);
    if (err != cudaSuccess) {
      // A lost context is no shortage of memory: say so rather than report an out-of-memory.
      if (cuda::is_sticky_error(err)) cuda::throw_cuda_error(err, "cuda allocator: cudaMalloc");
      cudaGetLastError();  // an out-of-memory error is not sticky: clear it, the device stays usable
      return nullptr;
    }
    reserved_ += static_cast<int64_t>(bytes);
    ++system_allocations_;
    segments_.push_back({p, bytes});
    return new Block{static_cast<char*>(p), bytes, s};
  }

  // Frees segments that are wholly unused (one free block spanning the segment).
  void release_unused() {
    for (auto it = segments_.begin(); it != segments_.end();) {
      Block* whole = nullptr;
      for (const auto* blocks : {&small_free_, &large_free_})
        for (Block* b : *blocks)
          if (b->ptr == it->first && b->size == it->second && !b->prev && !b->next && !is_pool(b->stream)) whole = b;
      if (whole) {
        pool(whole->small).erase(whole);
        delete whole;
        cuda::synchronize(device_, "releasing cached GPU memory");
        EMBER_CUDA_CHECK(cudaFree(it->first), "releasing cached GPU memory");
        reserved_ -= static_cast<int64_t>(it->second);
        it = segments_.erase(it);
      } else {
        ++it;
      }
    }
  }

  // A new segment of the large pool holding at least `size`, or null.
  Block* new_large_segment(size_t size, cudaStream_t s) {
    if (!growth_) {
      if (!segments_.empty()) return nullptr;
      // TF's default: one reservation of most of the free memory, served from then on.
      size_t free_bytes = 0, total = 0;
      EMBER_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total), "cuda allocator: querying device memory");
      size_t want = round_up(static_cast<size_t>(static_cast<double>(free_bytes) * kReserveFraction), kLargeRound);
      want = std::min(want, cap());
      return want >= size ? new_segment(want, s) : nullptr;
    }
    Block* b = new_segment(size, s);
    if (!b) {
      release_unused();
      b = new_segment(size, s);
    }
    return b;
  }

  // A new segment of the small pool holding at least `size` (2 MiB when it can), or null.
  Block* new_small_segment(size_t size, cudaStream_t s) {
    Block* b = nullptr;
    if (growth_) {
      b = new_segment(kSmallSegment, s);
      if (!b) b = new_segment(size, s);
      if (!b) {
        release_unused();
        b = new_segment(size, s);
      }
    } else {
      // The reservation is all there is: carve the segment out of the large pool, as a block allocated there.
      for (size_t want : {kSmallSegment, size}) {
        Block* host = take_free(want, s, /*small=*/false);
        if (!host) host = new_large_segment(want, s);
        if (!host) continue;
        split(host, want);
        host->allocated = true;
        b = new Block{host->ptr, host->size, s};
        carved_.emplace(b->ptr, host);
        break;
      }
    }
    if (b) b->small = true;
    return b;
  }

  Block* grow(size_t size, cudaStream_t s, size_t requested, bool small) {
    Block* b = small ? new_small_segment(size, s) : new_large_segment(size, s);
    if (!b) {
      throw make_error<ResourceExhausted>(
          "out of memory on ", device(), ": could not allocate ", requested, " bytes (", mib(static_cast<int64_t>(size)),
          "); ", mib(in_use_), " in use, ", mib(reserved_), " reserved", limit_ ? ", limit " + mib(static_cast<int64_t>(limit_)) : "",
          growth_ ? "" : " (memory growth off: the reservation is full)",
          ". Try a smaller batch size, or free tensors that are no longer needed");
    }
    return b;
  }

  Staging& staging(int slot) const {
    Staging& st = staging_[static_cast<size_t>(slot)];
    if (!st.buf) {
      EMBER_CUDA_CHECK(cudaHostAlloc(&st.buf, kStagingChunk, cudaHostAllocDefault), "cuda allocator: pinned staging");
      ++system_allocations_;
      EMBER_CUDA_CHECK(cudaEventCreateWithFlags(&st.ready, cudaEventDisableTiming), "cuda allocator: staging event");
    }
    return st;
  }

  const int device_;
  mutable std::mutex mu_;
  bool growth_;
  bool started_ = false;
  size_t limit_ = 0;
  int64_t in_use_ = 0, peak_ = 0, count_ = 0, reserved_ = 0;
  mutable std::atomic<int64_t> system_allocations_{0};  // cudaMalloc segments and pinned staging buffers
  std::set<Block*, BySize> small_free_, large_free_;
  std::map<void*, Block*> live_;
  std::map<char*, Block*> carved_;  // small segments carved out of the large pool: their base -> the host block
  std::vector<std::pair<void*, size_t>> segments_;
  mutable std::mutex staging_mu_;
  mutable Staging staging_[kStagingSlots];
  mutable int next_slot_ = 0;
  std::set<cudaStream_t> pools_;  // the pools not yet released
  uint64_t pool_count_ = 0;
  // The pool this thread allocates from, and for which device.
  struct ThreadPool {
    int device = -1;
    cudaStream_t key = nullptr;
  };
  static thread_local ThreadPool t_pool;
};

thread_local CudaAllocator::ThreadPool CudaAllocator::t_pool;

CudaAllocator& cuda_allocator(int device) {
  return dynamic_cast<CudaAllocator&>(allocator_for(Device::cuda(device)));
}

int cuda_device_count() {
  static const int n = [] {
    int count = 0;
    // No driver or no GPU is not an error: Ember then runs CPU-only, and says why (once: this runs once).
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
      cudaGetLastError();
      int driver = 0, runtime = 0;
      cudaDriverGetVersion(&driver);
      cudaRuntimeGetVersion(&runtime);
      auto version = [](int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); };
      const std::string why = std::string("cudaGetDeviceCount failed with ") + cudaGetErrorName(err) + " (" +
                              cudaGetErrorString(err) + "); Ember runs on the CPU only";
      if (err == cudaErrorNoDevice || driver == 0) {
        logging::info(why + (driver == 0 ? " (no CUDA driver found)" : ""));
      } else if (driver < runtime) {
        logging::warn(why + ": the CUDA driver supports CUDA " + version(driver) + ", older than the CUDA " +
                      version(runtime) + " runtime Ember was built with; update the driver");
      } else {
        logging::warn(why + " (driver CUDA " + version(driver) + ", runtime CUDA " + version(runtime) + ")");
      }
      return 0;
    }
    return count;
  }();
  return n;
}

// Never destroyed: tensors held in statics may be freed after static destructors ran.
Allocator* make_cuda_allocator(int device) { return new CudaAllocator(device); }

const bool cuda_allocator_registered = [] {
  register_allocator(DeviceType::CUDA, &make_cuda_allocator, &cuda_device_count);
  return true;
}();

}  // namespace

namespace cuda {
cudaStream_t new_memory_pool(int device) { return cuda_allocator(device).new_pool(); }
void use_memory_pool(int device, cudaStream_t pool) { CudaAllocator::set_thread_pool(device, pool); }
void release_memory_pool(int device, cudaStream_t pool) { cuda_allocator(device).release_pool(pool); }
}  // namespace cuda
}  // namespace ember
