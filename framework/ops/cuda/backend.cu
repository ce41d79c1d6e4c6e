// The CUDA backend's entry: device discovery. Kernels and the allocator arrive with the CUDA issue;
// compiling this file under nvcc from day one keeps the shared EMBER_HOST_DEVICE functors honest.
#include <cuda_runtime.h>

#include "framework/core/allocator.h"
#include "framework/ops/functors.h"

namespace ember {
namespace {

int cuda_device_count() {
  int n = 0;
  // No driver or no GPU is not an error: Ember then runs CPU-only.
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

template <class F, class T>
__global__ void unary_kernel(const T* in, T* out, int64_t n, F f) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = f(in[i]);
}

// Instantiates the shared functors for the device so that host-only code in them fails to compile.
[[maybe_unused]] void instantiate_functors() {
  unary_kernel<functors::Relu, float><<<1, 1>>>(nullptr, nullptr, 0, functors::Relu{});
  unary_kernel<functors::Sigmoid, float><<<1, 1>>>(nullptr, nullptr, 0, functors::Sigmoid{});
}

const bool registered = [] {
  register_allocator(DeviceType::CUDA, nullptr, &cuda_device_count);
  return true;
}();

}  // namespace
}  // namespace ember
