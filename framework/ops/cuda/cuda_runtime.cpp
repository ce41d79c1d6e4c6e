// The CUDA runtime shared by every CUDA kernel file: per-device streams, error mapping, workspace.
#include "framework/ops/cuda/cuda_runtime.h"

#include <array>
#include <mutex>
#include <string>

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
};

DeviceRuntime& runtime(int device) {
  static std::array<DeviceRuntime, kMaxDevices> devices;
  EMBER_CHECK(device >= 0 && device < kMaxDevices, InvalidArgument)
      << "cuda: device index " << device << " is out of range (Ember supports up to " << kMaxDevices << ")";
  return devices[static_cast<size_t>(device)];
}

}  // namespace

void throw_cuda_error(cudaError_t err, const char* what) {
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
  check(cudaStreamSynchronize(stream(device)), op);
#endif
}

void synchronize(int device, const char* what) {
  activate(device);
  check(cudaStreamSynchronize(stream(device)), what);
}

void* workspace(int device, size_t bytes) {
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

bool tf32_enabled() { return config::tensor_float_32_execution_enabled(); }

}  // namespace ember::cuda
