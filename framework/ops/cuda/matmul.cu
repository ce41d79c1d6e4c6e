// Integer matmul: a shared-memory tiled kernel. Products and sums run in the unsigned type of the same width,
// so overflow wraps (two's complement) without undefined behaviour; modular sums do not depend on their order,
// so the results equal the CPU's Eigen products bit for bit.
#include "framework/ops/cuda/cuda_runtime.h"
#include "framework/ops/cuda/cuda_types.cuh"
#include "framework/ops/cuda/matmul_launch.h"

namespace ember::cuda {

namespace {

constexpr int kMatmulTile = 16;

template <class T, class U>
__global__ void matmul_int_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int64_t m,
                                  int64_t n, int64_t k, bool ta, bool tb, int64_t batch, int64_t sa, int64_t sb) {
  __shared__ U as[kMatmulTile][kMatmulTile + 1];
  __shared__ U bs[kMatmulTile][kMatmulTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t m_tiles = (m + kMatmulTile - 1) / kMatmulTile, n_tiles = (n + kMatmulTile - 1) / kMatmulTile;
  // Block-uniform loops (the grid is capped), so every thread reaches each __syncthreads.
  for (int64_t z = blockIdx.z; z < batch; z += gridDim.z) {
    const T* ap = a + z * sa;
    const T* bp = b + z * sb;
    T* cp = c + z * m * n;
    for (int64_t tm = blockIdx.y; tm < m_tiles; tm += gridDim.y)
      for (int64_t tn = blockIdx.x; tn < n_tiles; tn += gridDim.x) {
        const int64_t row = tm * kMatmulTile + ty, col = tn * kMatmulTile + tx;
        U acc = 0;
        for (int64_t p0 = 0; p0 < k; p0 += kMatmulTile) {
          const int64_t pa = p0 + tx, pb = p0 + ty;
          as[ty][tx] = (row < m && pa < k) ? static_cast<U>(ta ? ap[pa * m + row] : ap[row * k + pa]) : U(0);
          bs[ty][tx] = (pb < k && col < n) ? static_cast<U>(tb ? bp[col * k + pb] : bp[pb * n + col]) : U(0);
          __syncthreads();
#pragma unroll
          for (int q = 0; q < kMatmulTile; ++q) acc += as[ty][q] * bs[q][tx];
          __syncthreads();
        }
        if (row < m && col < n) cp[row * n + col] = static_cast<T>(acc);
      }
  }
}

unsigned int matmul_grid_dim(int64_t want, int64_t cap) { return static_cast<unsigned int>(want < cap ? want : cap); }

}  // namespace

void launch_matmul_int(DT dt, const void* a, const void* b, void* c, int64_t m, int64_t n, int64_t k, bool ta, bool tb,
                       int64_t batch, int64_t a_stride, int64_t b_stride, int device, const char* op) {
  if (m == 0 || n == 0 || batch == 0) return;
  const dim3 block(kMatmulTile, kMatmulTile);
  const dim3 grid(matmul_grid_dim((n + kMatmulTile - 1) / kMatmulTile, 1 << 20),
                  matmul_grid_dim((m + kMatmulTile - 1) / kMatmulTile, 65535), matmul_grid_dim(batch, 65535));
  cudaStream_t s = stream(device);
  switch (dt) {
    case DT::I32:
      matmul_int_kernel<int32_t, uint32_t><<<grid, block, 0, s>>>(static_cast<const int32_t*>(a),
                                                                 static_cast<const int32_t*>(b),
                                                                 static_cast<int32_t*>(c), m, n, k, ta, tb, batch,
                                                                 a_stride, b_stride);
      break;
    case DT::I64:
      matmul_int_kernel<int64_t, uint64_t><<<grid, block, 0, s>>>(static_cast<const int64_t*>(a),
                                                                 static_cast<const int64_t*>(b),
                                                                 static_cast<int64_t*>(c), m, n, k, ta, tb, batch,
                                                                 a_stride, b_stride);
      break;
    default: return;
  }
  after_launch(op, device);
}

}  // namespace ember::cuda
