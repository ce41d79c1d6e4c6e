// CUDA kernels of the shape ops. Elements move as unsigned integers of their size, so one instantiation
// per size serves every dtype. The strided copy maps each destination index to its source through the
// per-dimension strides (32-bit index math when it fits, which is several times cheaper than 64-bit
// division); a batched 2-D transpose goes through shared-memory tiles so reads and writes both coalesce.
#include <cstdint>

#include "framework/ops/cuda/array_launch.h"
#include "framework/ops/cuda/cuda_runtime.h"

namespace ember::cuda {
namespace {

template <class E, class I, bool kDense>
__global__ void array_copy_kernel(const E* __restrict__ src, E* __restrict__ dst, ArrayCopyGeom g, I total) {
  for (I i = static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<I>(gridDim.x) * blockDim.x) {
    I rem = i;
    int64_t s = 0, d = 0;
    for (int k = g.rank - 1; k >= 0; --k) {
      const I n = static_cast<I>(g.size[k]);
      const I idx = rem % n;
      rem /= n;
      s += static_cast<int64_t>(idx) * g.src_stride[k];
      if constexpr (!kDense) d += static_cast<int64_t>(idx) * g.dst_stride[k];
    }
    dst[kDense ? static_cast<int64_t>(i) : d] = src[s];
  }
}

constexpr int kArrayTile = 32, kArrayTileRows = 8;

template <class E>
__global__ void array_transpose_kernel(const E* __restrict__ in, E* __restrict__ out, int64_t rows, int64_t cols) {
  __shared__ E tile[kArrayTile][kArrayTile + 1];
  const int64_t b = blockIdx.z;
  in += b * rows * cols;
  out += b * rows * cols;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * kArrayTile, c0 = static_cast<int64_t>(blockIdx.x) * kArrayTile;
  for (int j = threadIdx.y; j < kArrayTile; j += kArrayTileRows) {
    const int64_t r = r0 + j, c = c0 + threadIdx.x;
    if (r < rows && c < cols) tile[j][threadIdx.x] = in[r * cols + c];
  }
  __syncthreads();
  for (int j = threadIdx.y; j < kArrayTile; j += kArrayTileRows) {
    const int64_t c = c0 + j, r = r0 + threadIdx.x;
    if (r < rows && c < cols) out[c * rows + r] = tile[threadIdx.x][j];
  }
}

template <class E>
void array_copy_run(const void* src, void* dst, const ArrayCopyGeom& g, int64_t total, cudaStream_t stream) {
  const E* s = static_cast<const E*>(src);
  E* d = static_cast<E*>(dst);
  const unsigned blocks = blocks_for(total);
  // 32-bit indices only where i + the grid's stride cannot wrap.
  if (total < (int64_t{1} << 31)) {
    const auto n = static_cast<uint32_t>(total);
    if (g.dst_dense) array_copy_kernel<E, uint32_t, true><<<blocks, kThreads, 0, stream>>>(s, d, g, n);
    else array_copy_kernel<E, uint32_t, false><<<blocks, kThreads, 0, stream>>>(s, d, g, n);
  } else {
    const auto n = static_cast<uint64_t>(total);
    if (g.dst_dense) array_copy_kernel<E, uint64_t, true><<<blocks, kThreads, 0, stream>>>(s, d, g, n);
    else array_copy_kernel<E, uint64_t, false><<<blocks, kThreads, 0, stream>>>(s, d, g, n);
  }
}

template <class E>
void array_transpose_run(const void* src, void* dst, int64_t batch, int64_t rows, int64_t cols, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((cols + kArrayTile - 1) / kArrayTile),
                  static_cast<unsigned>((rows + kArrayTile - 1) / kArrayTile), static_cast<unsigned>(batch));
  array_transpose_kernel<E><<<grid, dim3(kArrayTile, kArrayTileRows), 0, stream>>>(static_cast<const E*>(src),
                                                                                  static_cast<E*>(dst), rows, cols);
}

}  // namespace

void array_strided_copy(const void* src, void* dst, int esize, const ArrayCopyGeom& g, int device,
                        cudaStream_t stream, const char* op) {
  int64_t total = 1;
  for (int k = 0; k < g.rank; ++k) total *= g.size[k];
  if (total == 0) return;
  switch (esize) {
    case 1: array_copy_run<uint8_t>(src, dst, g, total, stream); break;
    case 2: array_copy_run<uint16_t>(src, dst, g, total, stream); break;
    case 4: array_copy_run<uint32_t>(src, dst, g, total, stream); break;
    default: array_copy_run<uint64_t>(src, dst, g, total, stream); break;
  }
  after_launch(op, device);
}

void array_batched_transpose(const void* src, void* dst, int esize, int64_t batch, int64_t rows, int64_t cols,
                             int device, cudaStream_t stream, const char* op) {
  if (batch * rows * cols == 0) return;
  switch (esize) {
    case 1: array_transpose_run<uint8_t>(src, dst, batch, rows, cols, stream); break;
    case 2: array_transpose_run<uint16_t>(src, dst, batch, rows, cols, stream); break;
    case 4: array_transpose_run<uint32_t>(src, dst, batch, rows, cols, stream); break;
    default: array_transpose_run<uint64_t>(src, dst, batch, rows, cols, stream); break;
  }
  after_launch(op, device);
}

}  // namespace ember::cuda
