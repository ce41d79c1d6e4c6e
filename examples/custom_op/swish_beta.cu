// swish_beta's CUDA kernels: one thread per element (grid-stride), the math of swish_beta_math.h.
#include <cuda_runtime.h>

#include "swish_beta_cuda.h"
#include "swish_beta_math.h"

namespace {

constexpr int kThreads = 256;

unsigned int blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned int>(b < 1 ? 1 : (b > 65535 ? 65535 : b));
}

template <class T>
__global__ void swish_beta_kernel(const T* x, T* y, int64_t n, T beta) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x)
    y[i] = swish_beta_forward(x[i], beta);
}

template <class T>
__global__ void swish_beta_grad_kernel(const T* x, const T* dy, T* dx, int64_t n, T beta) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x)
    dx[i] = swish_beta_backward(x[i], dy[i], beta);
}

template <class T>
void forward(const T* x, T* y, int64_t n, T beta, void* stream) {
  if (n == 0) return;
  swish_beta_kernel<<<blocks_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(x, y, n, beta);
}

template <class T>
void backward(const T* x, const T* dy, T* dx, int64_t n, T beta, void* stream) {
  if (n == 0) return;
  swish_beta_grad_kernel<<<blocks_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(x, dy, dx, n, beta);
}

}  // namespace

// Ember checks the launch (cudaGetLastError) after the op's kernel returns.
void launch_swish_beta(const float* x, float* y, int64_t n, float beta, void* stream) { forward(x, y, n, beta, stream); }
void launch_swish_beta(const double* x, double* y, int64_t n, double beta, void* stream) {
  forward(x, y, n, beta, stream);
}
void launch_swish_beta_grad(const float* x, const float* dy, float* dx, int64_t n, float beta, void* stream) {
  backward(x, dy, dx, n, beta, stream);
}
void launch_swish_beta_grad(const double* x, const double* dy, double* dx, int64_t n, double beta, void* stream) {
  backward(x, dy, dx, n, beta, stream);
}
