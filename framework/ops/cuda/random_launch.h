#pragma once
// Host launchers of the random kernels (random.cu): random_uniform, random_normal and truncated_normal with
// the CPU's Philox layout (element i comes from block counter + i / per_block, per_block 2 for 8-byte dtypes
// and 4 otherwise), so the output is a function of the attributes alone. C++17-clean. Each launcher enqueues
// one kernel on `stream` and returns false, launching nothing, for a dtype it has no kernel for.
#include <cstdint>

#include "framework/ops/cuda/cuda_dt.h"
#include "framework/ops/cuda/cuda_runtime.h"

namespace ember::cuda {

// int32/int64: y[i] = lo + bits % range in the unsigned type of the dtype (range = maxval - minval, nonzero).
bool launch_random_uniform_integer(DT dt, void* y, int64_t n, uint64_t key, uint64_t counter, int64_t lo,
                                   uint64_t range, cudaStream_t stream);
// Float types: y[i] = u * range + lo in the compute type, u uniform in [0, 1) (lo and range hold its values).
bool launch_random_uniform_floating(DT dt, void* y, int64_t n, uint64_t key, uint64_t counter, double lo,
                                    double range, cudaStream_t stream);
// Float types: y[i] = z * stddev + mean, z standard normal (Box-Muller), redrawn while |z| >= 2 when
// `truncated` (mean and stddev hold values of the compute type).
bool launch_random_normal(DT dt, bool truncated, void* y, int64_t n, uint64_t key, uint64_t counter, double mean,
                          double stddev, cudaStream_t stream);

}  // namespace ember::cuda
