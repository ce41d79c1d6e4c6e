#pragma once
// Host launchers of the CUDA indexing ops: gather, unsorted_segment_sum, one_hot, pad (kernels in
// indexing.cu, planning and registration in indexing_cuda.cpp). Index tensors are I32, I64 or U8.
#include <cstdint>

#include "framework/ops/cuda/cuda_dt.h"
#include "framework/ops/cuda/cuda_runtime.h"

namespace ember::cuda {

// Queues the device check that the n indices (I32, I64 or U8) lie in [0, limit) (see begin_device_check).
void indexing_check_range(const void* indices, DT index_dt, int64_t n, int64_t limit, DeviceCheck check, int device,
                          cudaStream_t stream, const char* op);

// out rows over (batch, outer, k), each a copy of params row (batch * outer + o) * n + indices[b * k + j] of
// `inner` elements of `unit` bytes (1, 2, 4 or 8).
void indexing_gather(const void* params, const void* indices, DT index_dt, void* out, int unit, int64_t batch,
                     int64_t outer, int64_t n, int64_t k, int64_t inner, int device, cudaStream_t stream,
                     const char* op);

// out[segments, inner] = sums of data rows [rows, inner] by ids[rows]; deterministic makes floating sums
// run in row order (no atomics), as the CPU adds them.
void indexing_segment_sum(DT dt, const void* data, const void* ids, DT id_dt, void* out, int64_t rows, int64_t inner,
                          int64_t segments, bool deterministic, int device, cudaStream_t stream, const char* op);

// out (outer, depth, inner) of esize-byte elements: on where indices[o, i] == d, else off (raw bits).
void indexing_one_hot(const void* indices, DT index_dt, void* out, int esize, uint64_t on_bits, uint64_t off_bits,
                      int64_t outer, int64_t depth, int64_t inner, int device, cudaStream_t stream, const char* op);

inline constexpr int kIndexingPadMaxDims = 16;
enum class IndexingPadMode : uint8_t { Constant, Reflect, Symmetric };
// Per dimension: output size, input size, input stride (elements) and padding before.
struct IndexingPadGeom {
  int rank = 0;
  int64_t out_size[kIndexingPadMaxDims] = {}, in_size[kIndexingPadMaxDims] = {};
  int64_t in_stride[kIndexingPadMaxDims] = {}, before[kIndexingPadMaxDims] = {};
};
void indexing_pad(const void* in, void* out, int esize, const IndexingPadGeom& g, IndexingPadMode mode,
                  uint64_t constant_bits, int device, cudaStream_t stream, const char* op);

}  // namespace ember::cuda
