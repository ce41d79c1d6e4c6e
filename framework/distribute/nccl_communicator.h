#pragma once
// NCCL all-reduce of GPU buffers (internal; CUDA builds with NCCL only, EMBER_WITH_NCCL): the GPU workers'
// transport, as TF's NCCL CommunicationImplementation. NCCL's types stay in nccl_communicator.cpp. The all-reduce
// is enqueued on the device's compute stream (after the ops that made the buffer) and waited for with a deadline:
// a rank that never joins aborts the communicator and ends the call with DeadlineExceeded.
#include <cstddef>
#include <memory>
#include <string>

#include "framework/core/dtype.h"

namespace ember::distribute::detail {

class Communicator;

class NcclCommunicator {
 public:
  // One rank per worker of `mpi`'s job on `device` (a CUDA device index): the chief's NCCL id is broadcast over
  // MPI (NCCL bootstrapped over MPI). With a job of one, a communicator of this process alone.
  NcclCommunicator(Communicator& mpi, int device, double timeout_seconds);
  ~NcclCommunicator();
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int device() const { return device_; }
  // Sums `count` elements of `dtype` (Float32 or Float64) at `data` (memory of device()) over the ranks, in place.
  void all_reduce_sum(void* data, size_t count, DType dtype, double timeout_seconds, const std::string& what);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int device_ = 0;
};

}  // namespace ember::distribute::detail
