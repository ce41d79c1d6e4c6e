#pragma once
// The CUDA backend's runtime, internal to Ember (never installed): per-device compute stream, error
// checks that turn CUDA failures into ember::Error, a scratch workspace and launch sizing. C++17-clean
// and free of Ember's C++20 headers, so both the kernel files (.cu, nvcc) and the host-side kernel
// registration (.cpp, g++) include it.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace ember::cuda {

// Throws ember::Internal (ResourceExhausted for cudaErrorMemoryAllocation) naming `what` and the CUDA error.
// A sticky error (see is_sticky_error) is reported as the CUDA context being lost, with `what` named only as
// where it was detected: the fault comes from some earlier kernel, since kernels run asynchronously.
[[noreturn]] void throw_cuda_error(cudaError_t err, const char* what);

// True for the errors after which the CUDA context is unusable and every later CUDA call fails the same way
// (an illegal address, a failed launch, a device assert...): the process must restart to use the GPU again.
bool is_sticky_error(cudaError_t err);
// The context's sticky error, or cudaSuccess while it is usable. Cheap and non-blocking (it queries the
// legacy default stream, which reports a sticky error of the context); a library failure (cuBLASLt, cuDNN)
// asks it so that a lost context is not blamed on the library call that ran into it.
cudaError_t sticky_error_now();

// Throws when a CUDA runtime call failed: EMBER_CUDA_CHECK(cudaMemcpyAsync(...), "matmul").
inline void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throw_cuda_error(err, what);
}
#define EMBER_CUDA_CHECK(expr, what) ::ember::cuda::check((expr), (what))

// Makes `device` current on the calling thread (cheap when it already is).
void activate(int device);
// The one compute stream of a device, created on first use (non-blocking with respect to the legacy
// default stream). Every op on the device is enqueued on it, in program order.
cudaStream_t stream(int device);
// Called after each kernel launch with the op's name: catches launch errors at once; in debug builds
// (no NDEBUG) also synchronises so an asynchronous fault is reported by the op that caused it.
void after_launch(const char* op, int device);
// Waits for every op enqueued on the device's stream; a fault raised by an earlier op surfaces here
// as an ember::Error naming `what` (the host read that synchronised), and a failed device check (below)
// as InvalidArgument naming the op that queued it. Every host wait on a stream goes through here.
void synchronize(int device, const char* what);
// Waits for `event` (recorded on the device's stream), counted as a host synchronisation only when the
// host actually had to wait (the event had not completed yet).
void wait_event(int device, cudaEvent_t event, const char* what);
// Host waits on the device since the process started (synchronize, and wait_event calls that waited).
int64_t host_sync_count(int device);

// A check that runs on the device (TF's GPU kernels report bad indices the same way): the check's kernel
// calls atomicMin(slot, tag | position) for each value it rejects, position < 2^kCheckPositionBits; the
// next synchronize() reports the first check that failed (at its lowest rejected position) as
// InvalidArgument: "<op>: <what>[position] is not in [0, limit)". Values are not recorded, only positions.
inline constexpr int kCheckPositionBits = 40;
struct DeviceCheck {
  unsigned long long* slot;  // device memory
  unsigned long long tag;
};
// Registers a check about to be enqueued on the device's stream; op and what must outlive the process
// (string literals).
DeviceCheck begin_device_check(int device, const char* op, const char* what, int64_t limit);

// A scratch buffer of at least `bytes` on the device for cuBLASLt/cuDNN, valid until the next call on
// the same device (stream-ordered: every user runs on the one compute stream).
void* workspace(int device, size_t bytes);

// TF32 tensor-core math for float32 matmul and convolutions (on by default, as in TF).
bool tf32_enabled();

// Threads per block and the grid size for n elements (grid-stride loops cover any remainder).
inline constexpr int kThreads = 256;
inline unsigned int blocks_for(int64_t n, int threads = kThreads) {
  int64_t b = (n + threads - 1) / threads;
  if (b < 1) b = 1;
  if (b > 65535LL * 32) b = 65535LL * 32;
  return static_cast<unsigned int>(b);
}

}  // namespace ember::cuda
