#pragma once
// NCCL all-reduce of GPU buffers (internal; CUDA builds with NCCL only, EMBER_WITH_NCCL): the GPU workers'
// transport, as TF's NCCL CommunicationImplementation. NCCL's types stay in nccl_communicator.cpp. The all-reduce
// is enqueued on the device's compute stream (after the ops that made the buffer) and waited for with a deadline:
// a rank that never joins aborts the communicator and ends the call with DeadlineExceeded.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

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

// NCCL all-reduce among GPUs of this process (ncclCommInitAll, one rank per device): MirroredStrategy's replicas
// on distinct GPUs. Each device's all-reduce is enqueued on its compute stream inside one NCCL group and waited for
// with a deadline, as NcclCommunicator's.
class NcclLocalGroup {
 public:
  explicit NcclLocalGroup(const std::vector<int>& devices);
  ~NcclLocalGroup();
  NcclLocalGroup(const NcclLocalGroup&) = delete;
  NcclLocalGroup& operator=(const NcclLocalGroup&) = delete;

  // Sums `count` elements of `dtype` (Float32 or Float64) at buffers[i] (memory of the i-th device) over the
  // devices, in place in every buffer.
  void all_reduce_sum(const std::vector<void*>& buffers, size_t count, DType dtype, double timeout_seconds,
                      const std::string& what);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ember::distribute::detail
