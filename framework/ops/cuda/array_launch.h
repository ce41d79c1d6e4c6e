#pragma once
// Host launchers of the CUDA shape ops' data movement (kernels in array.cu, planning and registration in
// array_cuda.cpp): one strided copy serves transpose, concat, strided_slice, broadcast_to and tile.
#include <cstdint>

#include "framework/ops/cuda/cuda_runtime.h"

namespace ember::cuda {

inline constexpr int kArrayMaxDims = 16;

// A copy of `rank` nested dimensions: element (i_0, ..., i_{rank-1}) moves from src + sum(i_d * src_stride[d])
// to dst + sum(i_d * dst_stride[d]) (dst_dense: to the row-major position, dst_stride unused). Strides are
// in elements and may be negative (src) or zero (broadcast).
struct ArrayCopyGeom {
  int rank = 0;
  bool dst_dense = true;
  int64_t size[kArrayMaxDims] = {};
  int64_t src_stride[kArrayMaxDims] = {};
  int64_t dst_stride[kArrayMaxDims] = {};
};

// esize is 1, 2, 4 or 8 bytes.
void array_strided_copy(const void* src, void* dst, int esize, const ArrayCopyGeom& g, int device,
                        cudaStream_t stream, const char* op);

// out[b][c][r] = in[b][r][c] for `batch` row-major (rows, cols) matrices; needs ceil(rows / 32) and batch
// <= 65535 (array_transpose_fits).
void array_batched_transpose(const void* src, void* dst, int esize, int64_t batch, int64_t rows, int64_t cols,
                             int device, cudaStream_t stream, const char* op);
inline bool array_transpose_fits(int64_t batch, int64_t rows) {
  return batch <= 65535 && (rows + 31) / 32 <= 65535;
}

}  // namespace ember::cuda
