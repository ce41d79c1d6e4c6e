#pragma once
// Host launchers of the creation kernels (creation.cu): fill, range and linspace. C++17-clean. The values
// arrive already rounded as the CPU kernel rounds them (computed on the host by creation_cuda.cpp), widened to
// double or int64 for transport, which is exact. Each launcher enqueues one kernel on `stream` and returns
// false, launching nothing, for a dtype it has no kernel for.
#include <cstdint>

#include "framework/ops/cuda/cuda_dt.h"
#include "framework/ops/cuda/cuda_runtime.h"

namespace ember::cuda {

// Writes the element whose bytes are the low `element_size` bytes of `bits` (1, 2, 4 or 8) n times.
bool launch_fill(int element_size, uint64_t bits, void* y, int64_t n, cudaStream_t stream);
// y[i] = start + i * delta for int32 and int64 (two's complement wrap, never reached after the front end's
// checks).
bool launch_range_integer(DT dt, void* y, int64_t n, int64_t start, int64_t delta, cudaStream_t stream);
// y[i] = start + i * delta for the float types, in the compute type (start and delta hold its values).
bool launch_range_floating(DT dt, void* y, int64_t n, double start, double delta, cudaStream_t stream);
// y[i] = start + step * i, y[n - 1] = stop (y[0] = start when n == 1), in the compute type.
bool launch_linspace(DT dt, void* y, int64_t n, double start, double stop, double step, cudaStream_t stream);

}  // namespace ember::cuda
