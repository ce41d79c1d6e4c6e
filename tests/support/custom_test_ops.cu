// The CUDA kernel of the tests' custom op test_roll (tests/support/custom_test_ops.h), compiled as a user's .cu.
#include <cuda_runtime.h>

#include <cstdint>

namespace {
__global__ void roll_kernel(const unsigned char* x, unsigned char* y, int64_t n, int64_t shift, int64_t size) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x)
    for (int64_t b = 0; b < size; ++b) y[((i + shift) % n) * size + b] = x[i * size + b];
}
}  // namespace

void launch_test_roll(const void* x, void* y, int64_t n, int64_t shift, int64_t element_size, void* stream) {
  const int64_t blocks = (n + 255) / 256 < 4096 ? (n + 255) / 256 : 4096;
  roll_kernel<<<static_cast<unsigned int>(blocks), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const unsigned char*>(x), static_cast<unsigned char*>(y), n, shift, element_size);
}
