#include "framework/distribute/nccl_communicator.h"

#include <chrono>
#include <thread>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "framework/distribute/communicator.h"
#include "framework/distribute/errors.h"
#include "framework/ops/cuda/cuda_runtime.h"

namespace ember::distribute::detail {

namespace {
void check_nccl(ncclResult_t r, const std::string& what) {
  EMBER_CHECK(r == ncclSuccess || r == ncclInProgress, Unavailable) << what << ": NCCL failed: " << ncclGetErrorString(r);
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
  // Wait for the stream (the all-reduce and what came before it) against the deadline, watching NCCL's own errors.
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_seconds));
  for (;;) {
    const cudaError_t status = cudaStreamQuery(stream);
    if (status == cudaSuccess) return;
    if (status != cudaErrorNotReady) cuda::throw_cuda_error(status, what.c_str());
    ncclResult_t async = ncclSuccess;
    check_nccl(ncclCommGetAsyncError(impl_->comm, &async), what);
    check_nccl(async, what);
    const auto now = Clock::now();
    if (now >= deadline) break;
    if (now - start > std::chrono::seconds(1)) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  impl_->broken = true;
  ncclCommAbort(impl_->comm);
  impl_->comm = nullptr;
  throw DeadlineExceeded(what + ": the NCCL all-reduce did not complete within " + std::to_string(timeout_seconds) +
                         " s; another worker has died, hung or stopped calling the same collectives. The timeout "
                         "is MultiWorkerMirroredStrategyOptions::timeout_seconds, or the environment variable "
                         "EMBER_COLLECTIVE_TIMEOUT_SECONDS");
}

}  // namespace ember::distribute::detail
