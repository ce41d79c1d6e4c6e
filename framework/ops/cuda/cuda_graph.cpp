// CUDA graphs (device_graph::Capture and Graph on CUDA): stream capture of the device's compute stream in
// relaxed mode (the caching allocator may still take a segment from the driver), with the allocator serving the
// capturing thread from a private pool that the instantiated graph keeps until it is destroyed, as PyTorch's
// graph pools do. Every CUDA call is checked; a capture that fails leaves the stream as it was.
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "framework/core/device_graph.h"
#include "framework/core/error.h"
#include "framework/ops/cuda/cuda_capture.h"
#include "framework/ops/cuda/cuda_runtime.h"
#include "framework/ops/dispatch.h"

namespace ember::cuda {
namespace {

std::string cuda_error(cudaError_t err, const char* call) {
  return std::string(call) + " failed: " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")";
}

class CudaGraph final : public device_graph::Graph {
 public:
  CudaGraph(int device, cudaGraphExec_t exec, cudaStream_t pool, bool checks, std::vector<Tensor> kept)
      : device_(device), exec_(exec), pool_(pool), checks_(checks), kept_(std::move(kept)) {}
  ~CudaGraph() override {
    // Its last launch is queued on the stream before anything that reuses the pool's blocks (stream order).
    cudaGraphExecDestroy(exec_);
    kept_.clear();
    release_memory_pool(device_, pool_);
  }
  void launch() override {
    activate(device_);
    check(cudaGraphLaunch(exec_, stream(device_)), "cudaGraphLaunch");
    if (checks_) arm_captured_checks(device_);
  }

 private:
  int device_;
  cudaGraphExec_t exec_;
  cudaStream_t pool_;
  bool checks_;
  std::vector<Tensor> kept_;
};

class CudaCapture final : public device_graph::Capture {
 public:
  // Starts capturing; `ok` is false (and `why` says why) when it could not.
  CudaCapture(int device, std::string& why, bool& ok)
      : device_(device), lock_(ember::detail::device_enqueue_mutex(Device::cuda(device))) {
    ok = false;
    if (device_graph::current()) {
      why = "a capture is already running on this thread";
      return;
    }
    activate(device_);
    cudaStream_t s = stream(device_);
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    cudaError_t err = cudaStreamIsCapturing(s, &status);
    if (err != cudaSuccess || status != cudaStreamCaptureStatusNone) {
      why = err != cudaSuccess ? cuda_error(err, "cudaStreamIsCapturing") : "the stream is already being captured";
      cudaGetLastError();
      return;
    }
    pool_ = new_memory_pool(device_);
    err = cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed);
    if (err != cudaSuccess) {
      why = cuda_error(err, "cudaStreamBeginCapture");
      cudaGetLastError();
      release_memory_pool(device_, pool_);
      return;
    }
    use_memory_pool(device_, pool_);
    begin_capture_state(device_);
    device_graph::detail::set_current(this);
    capturing_ = true;
    ok = true;
  }

  ~CudaCapture() override {
    if (!capturing_) return;
    cudaGraph_t graph = nullptr;
    stop(graph);
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();  // an invalidated capture's error is not the next op's
    kept_.clear();
    release_memory_pool(device_, pool_);
  }

  std::unique_ptr<device_graph::Graph> finish(std::string& why) override {
    if (!capturing_) {
      why = "the capture is not running";
      return nullptr;
    }
    cudaGraph_t graph = nullptr;
    const cudaError_t err = stop(graph);
    std::unique_ptr<device_graph::Graph> out;
    if (err != cudaSuccess || !graph) {
      why = err != cudaSuccess ? cuda_error(err, "cudaStreamEndCapture") : "the capture recorded no graph";
      cudaGetLastError();
    } else {
      cudaGraphExec_t exec = nullptr;
      const cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
      if (inst != cudaSuccess || !exec) {
        why = cuda_error(inst, "cudaGraphInstantiate");
        cudaGetLastError();
      } else {
        out = std::make_unique<CudaGraph>(device_, exec, pool_, checks_, std::move(kept_));
        pool_ = nullptr;  // the graph's now
      }
    }
    if (graph) cudaGraphDestroy(graph);
    if (pool_) release_memory_pool(device_, pool_);
    pool_ = nullptr;
    kept_.clear();
    return out;
  }

  void keep(const Tensor& t) override { kept_.push_back(t); }

 private:
  // Ends capturing (the stream, the allocator's pool, the runtime's state) and returns EndCapture's result.
  cudaError_t stop(cudaGraph_t& graph) {
    checks_ = end_capture_state(device_);  // frees the capture's scratch into its pool first
    use_memory_pool(device_, nullptr);
    device_graph::detail::set_current(nullptr);
    capturing_ = false;
    return cudaStreamEndCapture(stream(device_), &graph);
  }

  int device_;
  std::lock_guard<std::recursive_mutex> lock_;  // no other thread's op joins the capture
  cudaStream_t pool_ = nullptr;
  bool capturing_ = false;
  bool checks_ = false;
  std::vector<Tensor> kept_;
};

std::unique_ptr<device_graph::Capture> begin_cuda_capture(int device, std::string& why) {
  bool ok = false;
  auto capture = std::make_unique<CudaCapture>(device, why, ok);
  if (!ok) return nullptr;
  return capture;
}

const bool cuda_graphs_registered = [] {
  device_graph::detail::set_backend(DeviceType::CUDA, &begin_cuda_capture);
  return true;
}();

}  // namespace
}  // namespace ember::cuda
