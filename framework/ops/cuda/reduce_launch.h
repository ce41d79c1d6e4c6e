#pragma once
// Host launchers of the CUDA reductions (reduce_*, argmax/argmin). reduce_cuda.cpp plans the geometry;
// the kernels live in reduce.cu. C++17-clean: plain pointers, sizes and DT only.
#include <cstdint>

#include "framework/ops/cuda/cuda_dt.h"
#include "framework/ops/cuda/cuda_runtime.h"

namespace ember::cuda {

// Collapsed kept or reduced dimensions: an input of rank <= 16 never needs more than 8 of either once
// size-1 dimensions are dropped and neighbours of the same kind merged.
inline constexpr int kReduceMaxDims = 8;

enum class ReduceKind : uint8_t { Sum, Mean, Max, Min, Prod, All, Any };

// A reduction seen from the input: kept dimensions (in the output's row-major order) and reduced
// dimensions, each as (size, input stride in elements). count is the number of elements reduced into
// each output (0: every output is the reduction's identity, finished).
struct ReduceGeom {
  int n_kept = 0, n_red = 0;
  int64_t kept_size[kReduceMaxDims] = {}, kept_stride[kReduceMaxDims] = {};
  int64_t red_size[kReduceMaxDims] = {}, red_stride[kReduceMaxDims] = {};
  int64_t n_out = 1, count = 1;
};

// reduce_* for the numeric dtypes (Sum..Prod) or bool (All, Any); `op` names the op in errors.
void reduce_launch(ReduceKind kind, DT dt, const void* in, void* out, const ReduceGeom& g, int device,
                   cudaStream_t stream, const char* op);

// argmax/argmin of an input seen as (outer, red, inner) along red (red >= 1); index_dt is I32 or I64.
void reduce_arg_launch(bool is_max, DT dt, DT index_dt, const void* in, void* out, int64_t outer, int64_t red,
                       int64_t inner, int device, cudaStream_t stream, const char* op);

}  // namespace ember::cuda
