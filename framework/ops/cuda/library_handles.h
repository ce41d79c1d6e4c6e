#pragma once
// cuBLASLt and cuDNN handles per device for the CUDA kernels (.cpp only, internal, never installed), and the
// status checks that turn library failures into ember::Error naming the op, its shapes and the library's status.
#include <cublasLt.h>
#include <cudnn.h>

#include <mutex>
#include <string>

namespace ember::cuda {

// The device's cuBLASLt handle, created on first use (thread-safe). cuBLASLt takes the stream per call, so
// pass cuda::stream(device) to cublasLtMatmul.
cublasLtHandle_t cublaslt_handle(int device);

// The device's cuDNN handle, bound to cuda::stream(device), together with the lock that serialises its use:
// a cuDNN handle must not be used by two threads at once, and the convolution's workspace pieces stay valid
// only while no other op of the device reaches cuda::workspace in between.
struct CudnnLease {
  cudnnHandle_t handle;
  std::unique_lock<std::mutex> lock;
};
CudnnLease cudnn_handle(int device);

// Throw ember::Unimplemented (the library does not support the configuration), ResourceExhausted (allocation
// failure) or Internal, e.g. "conv2d: cudnnConvolutionForward failed (CUDNN_STATUS_...: ...) for <context>".
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* op, const char* call,
                                     const std::string& context);
[[noreturn]] void throw_cudnn_error(cudnnStatus_t status, const char* op, const char* call,
                                    const std::string& context);

// check_cudnn(cudnnConvolutionForward(...), "conv2d", "cudnnConvolutionForward", [&] { return describe(); });
// the context (shapes, dtype) is built only when the call failed.
template <class Context>
void check_cublas(cublasStatus_t status, const char* op, const char* call, Context&& context) {
  if (status != CUBLAS_STATUS_SUCCESS) throw_cublas_error(status, op, call, context());
}
template <class Context>
void check_cudnn(cudnnStatus_t status, const char* op, const char* call, Context&& context) {
  if (status != CUDNN_STATUS_SUCCESS) throw_cudnn_error(status, op, call, context());
}

}  // namespace ember::cuda
