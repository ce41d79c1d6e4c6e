// cuBLASLt/cuDNN handles per device and their error reporting.
#include "framework/ops/cuda/library_handles.h"

#include <map>

#include "framework/core/error.h"
#include "framework/ops/cuda/cuda_runtime.h"

namespace ember::cuda {

namespace {

// The handles live until the process ends and are never destroyed: destroying them from a static destructor
// could run after the CUDA runtime has torn the device's context down.
struct LibraryHandlesCudnnEntry {
  cudnnHandle_t handle = nullptr;
  std::mutex use;  // serialises users of the handle
};

std::mutex& library_handles_mutex() {
  static std::mutex m;
  return m;
}

std::string library_handles_where(int device) { return "GPU:" + std::to_string(device); }

}  // namespace

cublasLtHandle_t cublaslt_handle(int device) {
  static std::map<int, cublasLtHandle_t> handles;
  std::lock_guard<std::mutex> guard(library_handles_mutex());
  auto it = handles.find(device);
  if (it != handles.end()) return it->second;
  activate(device);
  cublasLtHandle_t h = nullptr;
  check_cublas(cublasLtCreate(&h), "matmul", "cublasLtCreate", [&] { return library_handles_where(device); });
  handles.emplace(device, h);
  return h;
}

CudnnLease cudnn_handle(int device) {
  static std::map<int, LibraryHandlesCudnnEntry> entries;  // map nodes keep the mutexes in place
  LibraryHandlesCudnnEntry* entry = nullptr;
  {
    std::lock_guard<std::mutex> guard(library_handles_mutex());
    LibraryHandlesCudnnEntry& e = entries[device];
    if (e.handle == nullptr) {
      activate(device);
      cudnnHandle_t h = nullptr;
      auto where = [&] { return library_handles_where(device); };
      check_cudnn(cudnnCreate(&h), "cuDNN", "cudnnCreate", where);
      const cudnnStatus_t st = cudnnSetStream(h, stream(device));
      if (st != CUDNN_STATUS_SUCCESS) {
        cudnnDestroy(h);
        throw_cudnn_error(st, "cuDNN", "cudnnSetStream", where());
      }
      e.handle = h;
    }
    entry = &e;
  }
  return CudnnLease{entry->handle, std::unique_lock<std::mutex>(entry->use)};
}

namespace {

// A library call that failed because the context was already lost says so, rather than blaming itself.
void library_handles_check_context(const char* op, const char* call) {
  const cudaError_t sticky = sticky_error_now();
  if (sticky != cudaSuccess) throw_cuda_error(sticky, (std::string(op) + " (" + call + ")").c_str());
}

}  // namespace

void throw_cublas_error(cublasStatus_t status, const char* op, const char* call, const std::string& context) {
  library_handles_check_context(op, call);
  const std::string msg = std::string(op) + ": " + call + " failed (" + cublasLtGetStatusName(status) + ": " +
                          cublasLtGetStatusString(status) + ") for " + context;
  if (status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_ARCH_MISMATCH) throw Unimplemented(msg);
  if (status == CUBLAS_STATUS_ALLOC_FAILED) throw ResourceExhausted(msg);
  throw Internal(msg);
}

void throw_cudnn_error(cudnnStatus_t status, const char* op, const char* call, const std::string& context) {
  library_handles_check_context(op, call);
  const std::string msg = std::string(op) + ": " + call + " failed (cuDNN status " + std::to_string(status) + ": " +
                          cudnnGetErrorString(status) + ") for " + context;
  if (CUDNN_STATUS_CATEGORY(status) == CUDNN_STATUS_NOT_SUPPORTED) throw Unimplemented(msg);
  if (status == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
      status == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED)
    throw ResourceExhausted(msg);
  throw Internal(msg);
}

}  // namespace ember::cuda
