#include "framework/distribute/nccl_communicator.h"

#include <chrono>
#include <thread>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "framework/core/error.h"
#include "framework/distribute/communicator.h"
#include "framework/ops/cuda/cuda_runtime.h"

namespace ember::distribute::detail {

namespace {
void check_nccl(ncclResult_t r, const std::string& what) {
  EMBER_CHECK(r == ncclSuccess || r == ncclInProgress, Unavailable) << what << ": NCCL failed: " << ncclGetErrorString(r);
}

// Waits for the streams (the all-reduces and what came before them) until the deadline, watching NCCL's own
// errors: whether they finished in time.
bool wait_for(const std::vector<cudaStream_t>& streams, const std::vector<ncclComm_t>& comms, double timeout_seconds,
              const std::string& what) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto deadline =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_seconds));
  for (;;) {
    bool done = true;
    for (cudaStream_t stream : streams) {
      const cudaError_t status = cudaStreamQuery(stream);
      if (status == cudaErrorNotReady) done = false;
      else if (status != cudaSuccess) cuda::throw_cuda_error(status, what.c_str());
    }
    if (done) return true;
    for (ncclComm_t comm : comms) {
      ncclResult_t async = ncclSuccess;
      check_nccl(ncclCommGetAsyncError(comm, &async), what);
      check_nccl(async, what);
    }
    const auto now = Clock::now();
    if (now >= deadline) return false;
    if (now - start > std::chrono::seconds(1)) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

[[noreturn]] void throw_timed_out(double timeout_seconds, const std::string& what) {
  throw DeadlineExceeded(what + ": the NCCL all-reduce did not complete within " + std::to_string(timeout_seconds) +
                         " s; another worker has died, hung or stopped calling the same collectives. The timeout "
                         "is MultiWorkerMirroredStrategyOptions::timeout_seconds, or the environment variable "
                         "EMBER_COLLECTIVE_TIMEOUT_SECONDS");
}
}  // namespace

struct NcclCommunicator::Impl {
  ncclComm_t comm = nullptr;
  bool broken = false;
};

NcclCommunicator::NcclCommunicator(Communicator& mpi, int device, double timeout_seconds)
    : impl_(std::make_unique<Impl>()), device_(device) {
  const std::string what = "NCCL communicator on cuda:" + std::to_string(device);
  cuda::activate(device);
  ncclUniqueId id;
  if (mpi.rank() == 0) check_nccl(ncclGetUniqueId(&id), what);
  mpi.broadcast(&id, sizeof id, 0, timeout_seconds, what + " (sharing the chief's NCCL id)");
  check_nccl(ncclCommInitRank(&impl_->comm, mpi.size(), id, mpi.rank()), what);
}

NcclCommunicator::~NcclCommunicator() {
  if (!impl_->comm) return;
  // A communicator left mid-operation cannot be destroyed cleanly: abort it.
  if (impl_->broken) ncclCommAbort(impl_->comm);
  else ncclCommDestroy(impl_->comm);
}

void NcclCommunicator::all_reduce_sum(void* data, size_t count, DType dtype, double timeout_seconds,
                                      const std::string& what) {
  EMBER_CHECK(!impl_->broken, Unavailable)
      << what << ": an earlier NCCL all-reduce timed out, so this worker can no longer communicate; end the job and "
      << "restart it (BackupAndRestore resumes training)";
  EMBER_CHECK(dtype == DType::Float32 || dtype == DType::Float64, InvalidArgument)
      << what << ": all-reduce takes float32 or float64 values, got " << dtype_name(dtype);
  if (count == 0) return;
  cuda::activate(device_);
  cudaStream_t stream = cuda::stream(device_);
  check_nccl(ncclAllReduce(data, data, count, dtype == DType::Float32 ? ncclFloat32 : ncclFloat64, ncclSum,
                           impl_->comm, stream),
             what);
  if (wait_for({stream}, {impl_->comm}, timeout_seconds, what)) return;
  impl_->broken = true;
  ncclCommAbort(impl_->comm);
  impl_->comm = nullptr;
  throw_timed_out(timeout_seconds, what);
}

struct NcclLocalGroup::Impl {
  std::vector<int> devices;
  std::vector<ncclComm_t> comms;
};

NcclLocalGroup::NcclLocalGroup(const std::vector<int>& devices) : impl_(std::make_unique<Impl>()) {
  impl_->devices = devices;
  impl_->comms.resize(devices.size());
  check_nccl(ncclCommInitAll(impl_->comms.data(), static_cast<int>(devices.size()), devices.data()),
             "NCCL communicator over this process's GPUs");
}

NcclLocalGroup::~NcclLocalGroup() {
  for (ncclComm_t c : impl_->comms)
    if (c) ncclCommDestroy(c);
}

void NcclLocalGroup::all_reduce_sum(const std::vector<void*>& buffers, size_t count, DType dtype,
                                    double timeout_seconds, const std::string& what) {
  EMBER_CHECK(!impl_->comms.empty() && impl_->comms[0], Unavailable)
      << what << ": an earlier NCCL all-reduce between this process's GPUs timed out; restart the process";
  EMBER_CHECK(buffers.size() == impl_->devices.size(), Internal)
      << what << ": " << buffers.size() << " buffers for " << impl_->devices.size() << " GPUs";
  EMBER_CHECK(dtype == DType::Float32 || dtype == DType::Float64, InvalidArgument)
      << what << ": all-reduce takes float32 or float64 values, got " << dtype_name(dtype);
  if (count == 0) return;
  std::vector<cudaStream_t> streams;
  check_nccl(ncclGroupStart(), what);
  for (size_t i = 0; i < buffers.size(); ++i) {
    cuda::activate(impl_->devices[i]);
    streams.push_back(cuda::stream(impl_->devices[i]));
    check_nccl(ncclAllReduce(buffers[i], buffers[i], count, dtype == DType::Float32 ? ncclFloat32 : ncclFloat64,
                             ncclSum, impl_->comms[i], streams.back()),
               what);
  }
  check_nccl(ncclGroupEnd(), what);
  if (wait_for(streams, impl_->comms, timeout_seconds, what)) return;
  for (ncclComm_t& c : impl_->comms) {
    ncclCommAbort(c);
    c = nullptr;
  }
  throw_timed_out(timeout_seconds, what);
}

}  // namespace ember::distribute::detail
