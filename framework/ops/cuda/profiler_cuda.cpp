// The profiler's kernel timing on CUDA devices (profiler::detail::DeviceTimer): a mark is a CUDA event
// recorded on the device's stream; set as the profiler's timer when the library loads.
#include <cmath>

#include "framework/core/profiler.h"
#include "framework/ops/cuda/cuda_runtime.h"

namespace ember::cuda {
namespace {

class ProfilerCudaTimer final : public profiler::detail::DeviceTimer {
 public:
  void* mark(int device) override {
    activate(device);
    cudaEvent_t event = nullptr;
    EMBER_CUDA_CHECK(cudaEventCreate(&event), "profiler (cudaEventCreate)");
    const cudaError_t err = cudaEventRecord(event, stream(device));
    if (err != cudaSuccess) {
      cudaEventDestroy(event);
      throw_cuda_error(err, "profiler (cudaEventRecord)");
    }
    return event;
  }

  int64_t elapsed_ns(int device, void* from, void* to) override {
    const auto a = static_cast<cudaEvent_t>(from), b = static_cast<cudaEvent_t>(to);
    wait_event(device, a, "profiler (kernel times)");
    wait_event(device, b, "profiler (kernel times)");
    float ms = 0;
    EMBER_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b), "profiler (cudaEventElapsedTime)");
    return std::llround(static_cast<double>(ms) * 1e6);
  }

  void release(int, void* mark) noexcept override { cudaEventDestroy(static_cast<cudaEvent_t>(mark)); }
};

// Never destroyed: the profiler may still hold marks when static destructors run.
const bool profiler_cuda_timer_set = [] {
  profiler::detail::set_device_timer(new ProfilerCudaTimer);
  return true;
}();

}  // namespace
}  // namespace ember::cuda
