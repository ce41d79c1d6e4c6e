#pragma once
// The process's collective communication with the other workers of a job (internal to framework/distribute and
// its tests; MPI's types stay in communicator.cpp, as CUDA's stay out of public headers). Open MPI starts the
// workers (`mpirun -np N`); a process started without mpirun is a job of one. Every collective is MPI's
// non-blocking form, polled until a deadline: a worker that died or hangs ends the call with DeadlineExceeded,
// naming the operation and the timeout, instead of a silent hang.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "framework/core/dtype.h"

namespace ember::distribute::detail {

class Communicator {
 public:
  // The process's communicator: initialises MPI on the first call (MPI_Init_thread; MPI_Finalize at exit).
  static Communicator& world();
  // The communicator when a strategy has made it, else null (MPI is then not initialised).
  static const Communicator* existing();
  // A job of this process alone, without MPI (a strategy whose replicas all live in this process).
  static Communicator& local();

  int rank() const { return rank_; }
  int size() const { return size_; }

  // Sums the `count` elements of `dtype` (Float32 or Float64) at `data` across all workers into `result`. Never in
  // place: Open MPI's non-blocking all-reduce in place allocates a scratch buffer on every call, which cost a
  // 1 MB all-reduce a quarter of its speed (bench_distributed).
  void all_reduce_sum(const void* data, void* result, size_t count, DType dtype, double timeout_seconds,
                      const std::string& what);
  // all_reduce_sum started and left running (MPI_Iallreduce, one per piece of at least 2 MiB: communicator.cpp):
  // returns a ticket for test and wait. The buffers must stay untouched until wait returns.
  uint64_t start_all_reduce_sum(const void* data, void* result, size_t count, DType dtype, const std::string& what);
  // Moves the collective on (MPI progresses a non-blocking collective only inside its calls): whether it is done.
  bool test(uint64_t ticket, const std::string& what);
  // Waits for it until `timeout_seconds` pass (DeadlineExceeded then, and this worker is broken).
  void wait(uint64_t ticket, double timeout_seconds, const std::string& what);
  // Copies `bytes` bytes at `data` from the worker `root` to every worker.
  void broadcast(void* data, size_t bytes, int root, double timeout_seconds, const std::string& what);
  // Every worker's `mine` (the same length on all), concatenated in rank order.
  std::vector<uint64_t> all_gather(const std::vector<uint64_t>& mine, double timeout_seconds, const std::string& what);
  // A collective that missed its deadline leaves MPI mid-operation: every later call is refused, and the process
  // ends the whole job at exit (MPI_Abort) rather than finalise, so no other worker waits on it forever.
  bool broken() const { return broken_; }
  // Marks this worker broken: it leaves collectives running that it will not wait for (an error cut its step).
  void abandon() { broken_ = true; }

 private:
  explicit Communicator(bool use_mpi);
  void check_usable(const std::string& what) const;

  int rank_ = 0, size_ = 1;
  bool broken_ = false;
};

// The collectives' timeout when the strategy's options set none: EMBER_COLLECTIVE_TIMEOUT_SECONDS when set
// (a positive number; anything else is an InvalidArgument), else 600 seconds.
double default_timeout_seconds();

}  // namespace ember::distribute::detail
