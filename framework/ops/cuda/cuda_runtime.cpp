// The CUDA runtime shared by every CUDA kernel file: per-device streams, error mapping, workspace.
#include "framework/ops/cuda/cuda_capture.h"
#include "framework/ops/cuda/cuda_runtime.h"

#include <array>
#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "framework/core/allocator.h"
#include "framework/core/config.h"
#include "framework/core/error.h"

namespace ember::cuda {

namespace {

constexpr int kMaxDevices = 16;

struct DeviceRuntime {
  std::once_flag once;
  cudaStream_t stream = nullptr;
  // Scratch memory, owned through the device's caching allocator.
  std::mutex ws_mu;
  void* ws = nullptr;
  size_t ws_bytes = 0;
  std::atomic<int64_t> syncs{0};
  // Device checks: the slot their kernels write (all ones: none failed) and the checks queued since the
  // slot was last read; a check's tag is its index here.
  std::once_flag check_once;
  unsigned long long* check_slot = nullptr;        // device memory
  unsigned long long* check_readback = nullptr;    // pinned host memory
  std::mutex check_mu;
  struct PendingCheck {
    const char* op;
    const char* what;
    int64_t limit;
  };
  std::vector<PendingCheck> pending;
  // Checks inside captured graphs: tags from kCapturedChecks up, kept for the process (a graph's kernels carry
  // them on every launch); `armed` once a graph with checks was launched since the slot was last read.
  std::vector<PendingCheck> captured;
  bool armed = false;
};

// The tags' upper half belongs to captured graphs' checks.
constexpr size_t kCapturedChecks = size_t{1} << (63 - kCheckPositionBits);
constexpr size_t kMaxPendingChecks = kCapturedChecks;

// The capture running on this thread: its device (-1: none), whether it registered device checks, and its
// scratch blocks (freed into its pool when it ends; later blocks are larger).
struct CaptureState {
  int device = -1;
  bool checks = false;
  std::vector<std::pair<void*, size_t>> scratch;
};
thread_local CaptureState t_capture;

DeviceRuntime& runtime(int device) {
  static std::array<DeviceRuntime, kMaxDevices> devices;
  EMBER_CHECK(device >= 0 && device < kMaxDevices, InvalidArgument)
      << "cuda: device index " << device << " is out of range (Ember supports up to " << kMaxDevices << ")";
  return devices[static_cast<size_t>(device)];
}

}  // namespace

bool is_sticky_error(cudaError_t err) {
  // The errors whose documentation (driver_types.h) says the process must be terminated and relaunched.
  switch (err) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
    case cudaErrorMpsClientTerminated:
    case cudaErrorExternalDevice:
      return true;
    default:
      // By number, since older toolkits lack their names: cudaErrorContained (226), cudaErrorTensorMemoryLeak (721).
      return static_cast<int>(err) == 226 || static_cast<int>(err) == 721;
  }
}

cudaError_t sticky_error_now() {
  const cudaError_t last = cudaPeekAtLastError();
  if (is_sticky_error(last)) return last;
  const cudaError_t query = cudaStreamQuery(nullptr);
  if (is_sticky_error(query)) return query;
  if (query == cudaErrorNotReady) cudaGetLastError();  // busy is no fault: leave no "not ready" as the last error
  return cudaSuccess;
}

void throw_cuda_error(cudaError_t err, const char* what) {
  if (is_sticky_error(err)) {
    // Not cleared (it cannot be) and not blamed on `what`: the op that faulted ran earlier, asynchronously.
    throw Internal(std::string("CUDA context lost: CUDA error ") + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) +
                   "), detected at " + what + " (the fault of a GPU op queued before this point, which ran "
                   "asynchronously; CUDA_LAUNCH_BLOCKING=1 reports it at the op that caused it). Every later CUDA "
                   "call of this process fails the same way: the process must restart to use the GPU again");
  }
  cudaGetLastError();  // clears a non-sticky error so the process stays usable
  std::string msg = std::string(what) + ": CUDA error " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")";
  if (err == cudaErrorMemoryAllocation) throw ResourceExhausted(msg);
  throw Internal(msg);
}

void activate(int device) {
  // Asked of the runtime each time (cheap, no driver call) rather than cached: code outside Ember may
  // switch the thread's device too.
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess && current == device) return;
  check(cudaSetDevice(device), "cuda: selecting the device");
}

cudaStream_t stream(int device) {
  DeviceRuntime& r = runtime(device);
  std::call_once(r.once, [&] {
    activate(device);
    check(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking), "cuda: creating the compute stream");
  });
  return r.stream;
}

void after_launch(const char* op, int device) {
  check(cudaGetLastError(), op);
#if !defined(NDEBUG)
  if (!capturing(device)) synchronize(device, op);
#endif
}

namespace {

// Reads and resets the check slot once the checks queued so far have run, then reports the first that
// failed. The read is ordered on the stream after them; the caller has just drained it, so it costs no
// further wait worth counting.
void report_failed_checks(int device, DeviceRuntime& r) {
  std::unique_lock<std::mutex> lock(r.check_mu);
  if (r.pending.empty() && !r.armed) return;
  r.armed = false;
  cudaStream_t s = stream(device);
  check(cudaMemcpyAsync(r.check_readback, r.check_slot, sizeof(unsigned long long), cudaMemcpyDeviceToHost, s),
        "reading the device checks");
  check(cudaMemsetAsync(r.check_slot, 0xFF, sizeof(unsigned long long), s), "resetting the device checks");
  check(cudaStreamSynchronize(s), "reading the device checks");
  const unsigned long long key = *r.check_readback;
  std::vector<DeviceRuntime::PendingCheck> pending;
  pending.swap(r.pending);
  lock.unlock();
  if (key == ~0ULL) return;
  const size_t index = static_cast<size_t>(key >> kCheckPositionBits);
  const int64_t position = static_cast<int64_t>(key & ((1ULL << kCheckPositionBits) - 1));
  DeviceRuntime::PendingCheck c{};
  if (index >= kCapturedChecks) {
    lock.lock();
    EMBER_CHECK(index - kCapturedChecks < r.captured.size(), Internal)
        << "cuda: a captured graph's device check reported an unknown tag " << index;
    c = r.captured[index - kCapturedChecks];
    lock.unlock();
  } else {
    EMBER_CHECK(index < pending.size(), Internal) << "cuda: a device check reported an unknown tag " << index;
    c = pending[index];
  }
  throw make_error<InvalidArgument>(c.op, ": ", c.what, "[", position, "] is not in [0, ", c.limit,
                                    ") (a flat position; checked on ", Device::cuda(device),
                                    " and reported at the next synchronisation with the host)");
}

}  // namespace

void synchronize(int device, const char* what) {
  refuse_during_capture(device, what);
  activate(device);
  DeviceRuntime& r = runtime(device);
  r.syncs.fetch_add(1, std::memory_order_relaxed);
  check(cudaStreamSynchronize(stream(device)), what);
  report_failed_checks(device, r);
}

void wait_event(int device, cudaEvent_t event, const char* what) {
  refuse_during_capture(device, what);
  const cudaError_t done = cudaEventQuery(event);
  if (done == cudaSuccess) return;
  if (done != cudaErrorNotReady) throw_cuda_error(done, what);
  runtime(device).syncs.fetch_add(1, std::memory_order_relaxed);
  check(cudaEventSynchronize(event), what);
}

int64_t host_sync_count(int device) { return runtime(device).syncs.load(std::memory_order_relaxed); }

DeviceCheck begin_device_check(int device, const char* op, const char* what, int64_t limit) {
  DeviceRuntime& r = runtime(device);
  // The slot is made (and reset) outside any graph: by the run before a capture.
  if (capturing(device) && !r.check_slot) refuse_during_capture(device, op);
  std::call_once(r.check_once, [&] {
    // From the caching allocator, outside check_mu: the allocator may synchronise, which reads the checks.
    r.check_slot = static_cast<unsigned long long*>(allocator_for(Device::cuda(device)).allocate(sizeof(unsigned long long)));
    check(cudaHostAlloc(reinterpret_cast<void**>(&r.check_readback), sizeof(unsigned long long), cudaHostAllocDefault),
          "cuda: the device checks' readback buffer");
    check(cudaMemsetAsync(r.check_slot, 0xFF, sizeof(unsigned long long), stream(device)),
          "cuda: resetting the device checks");
  });
  if (capturing(device)) {
    std::lock_guard<std::mutex> lock(r.check_mu);
    EMBER_CHECK(r.captured.size() < kCapturedChecks, Unimplemented)
        << op << ": the captured graphs of this process hold " << r.captured.size() << " device checks, the most "
        << "there are tags for";
    t_capture.checks = true;
    const unsigned long long tag = static_cast<unsigned long long>(kCapturedChecks + r.captured.size())
                                   << kCheckPositionBits;
    r.captured.push_back({op, what, limit});
    return DeviceCheck{r.check_slot, tag};
  }
  bool full = false;
  {
    std::lock_guard<std::mutex> lock(r.check_mu);
    full = r.pending.size() >= kMaxPendingChecks;
  }
  // Millions of checks without a host read: read them now rather than run out of tags.
  if (full) synchronize(device, op);
  std::lock_guard<std::mutex> lock(r.check_mu);
  const unsigned long long tag = static_cast<unsigned long long>(r.pending.size()) << kCheckPositionBits;
  r.pending.push_back({op, what, limit});
  return DeviceCheck{r.check_slot, tag};
}

void* workspace(int device, size_t bytes) {
  if (capturing(device)) {
    // The capture's own scratch, from its pool: the shared workspace may be replaced (and its block reused)
    // while the graph lives.
    std::vector<std::pair<void*, size_t>>& scratch = t_capture.scratch;
    if (scratch.empty() || scratch.back().second < bytes)
      scratch.emplace_back(allocator_for(Device::cuda(device)).allocate(bytes), bytes);
    return scratch.back().first;
  }
  DeviceRuntime& r = runtime(device);
  std::lock_guard<std::mutex> lock(r.ws_mu);
  if (r.ws_bytes < bytes) {
    Allocator& a = allocator_for(Device::cuda(device));
    // The allocator is stream-ordered: the old block may be reused by a later op on the same stream.
    if (r.ws) a.deallocate(r.ws, r.ws_bytes);
    r.ws = nullptr;
    r.ws_bytes = 0;
    r.ws = a.allocate(bytes);
    r.ws_bytes = bytes;
  }
  return r.ws;
}

bool capturing(int device) { return t_capture.device == device; }

void refuse_during_capture(int device, const char* what) {
  EMBER_CHECK(!capturing(device), Unimplemented)
      << what << ": cannot run while the ops of " << Device::cuda(device) << " are captured into a CUDA graph "
      << "(it waits for the device or copies host memory, which a replay would not repeat)";
}

void begin_capture_state(int device) {
  t_capture = CaptureState{};
  t_capture.device = device;
}

bool end_capture_state(int device) {
  // Still capturing (device set): the scratch blocks go back to the capture's pool.
  Allocator& a = allocator_for(Device::cuda(device));
  for (const auto& [ptr, bytes] : t_capture.scratch) a.deallocate(ptr, bytes);
  const bool checks = t_capture.checks;
  t_capture = CaptureState{};
  return checks;
}

void arm_captured_checks(int device) {
  DeviceRuntime& r = runtime(device);
  std::lock_guard<std::mutex> lock(r.check_mu);
  r.armed = true;
}

bool tf32_enabled() { return config::tensor_float_32_execution_enabled(); }

}  // namespace ember::cuda
