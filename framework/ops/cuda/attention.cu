// CUDA fused attention (float32, float64): a block of threads per (batch, head, tile of rows), one thread per row,
// the tiles of the other side staged in shared memory in turn. The forward keeps a running max, sum and output per
// query (online softmax) and writes each query's logsumexp; the backward recomputes the probabilities from it, one
// kernel for dq (a thread per query) and one for dk and dv (a thread per key), so no thread ever adds into another's
// result and the sums are deterministic. The formulas are cpu/attention.cpp's.
#include <cmath>
#include <limits>

#include "framework/ops/cuda/attention_launch.h"
#include "framework/ops/cuda/cuda_runtime.h"
#include "framework/ops/cuda/cuda_types.cuh"

namespace ember::cuda {
namespace {

__device__ __forceinline__ float att_exp(float v) { return expf(v); }
__device__ __forceinline__ double att_exp(double v) { return exp(v); }
__device__ __forceinline__ float att_log(float v) { return logf(v); }
__device__ __forceinline__ double att_log(double v) { return log(v); }

__device__ __forceinline__ int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }

// The static shared memory a block may use without opting in.
constexpr size_t kSharedBytes = 48 * 1024;
constexpr int kMaxTile = 64;

// Row i of head h of batch b in a (batch, len, heads, width) tensor.
template <class C>
__device__ __forceinline__ const C* row_ptr(const C* base, const AttentionDims& d, int64_t len, int64_t width, int64_t b,
                                            int64_t h, int64_t i) {
  return base + ((b * len + i) * d.heads + h) * width;
}

// Copies rows [first, first + tile) (those below len) of head h of batch b into smem [tile][width], all threads.
template <class C>
__device__ void stage(C* smem, const C* base, const AttentionDims& d, int64_t len, int64_t width, int64_t b, int64_t h,
                      int64_t first, int tile) {
  const int64_t n = static_cast<int64_t>(tile) * width;
  for (int64_t e = threadIdx.x; e < n; e += blockDim.x) {
    const int64_t r = e / width, c = e % width;
    smem[e] = first + r < len ? row_ptr(base, d, len, width, b, h, first + r)[c] : C(0);
  }
}

template <class C>
__device__ __forceinline__ C dot(const C* a, const C* b, int64_t n) {
  C s = 0;
  for (int64_t c = 0; c < n; ++c) s = fma_rn(a[c], b[c], s);
  return s;
}

// Block (tile of queries, b * heads + h) flattened into blockIdx.x; shared: q [tile][dim], acc [tile][v_dim],
// k [tile][dim], v [tile][v_dim].
template <class C>
__global__ void forward_kernel(AttentionDims d, const C* q, const C* k, const C* v, C* o, C* lse, int tile) {
  extern __shared__ __align__(16) unsigned char smem_bytes[];
  C* sq = reinterpret_cast<C*>(smem_bytes);
  C* sacc = sq + tile * d.dim;
  C* sk = sacc + tile * d.v_dim;
  C* sv = sk + tile * d.dim;
  const int64_t tiles = (d.q_len + tile - 1) / tile;
  const int64_t bh = blockIdx.x / tiles, b = bh / d.heads, h = bh % d.heads, i0 = blockIdx.x % tiles * tile;
  const int64_t i = i0 + threadIdx.x;
  const bool active = i < d.q_len;
  const C scale = static_cast<C>(d.scale);
  stage(sq, q, d, d.q_len, d.dim, b, h, i0, tile);
  C* acc = sacc + threadIdx.x * d.v_dim;
  for (int64_t c = 0; c < d.v_dim; ++c) acc[c] = 0;
  const C* qi = sq + threadIdx.x * d.dim;
  C m = -std::numeric_limits<C>::infinity(), l = 0;
  const int64_t k_end = d.causal ? imin(d.k_len, i0 + tile) : d.k_len;
  for (int64_t j0 = 0; j0 < k_end; j0 += tile) {
    __syncthreads();  // the previous tile is no longer read
    stage(sk, k, d, d.k_len, d.dim, b, h, j0, tile);
    stage(sv, v, d, d.k_len, d.v_dim, b, h, j0, tile);
    __syncthreads();
    if (!active) continue;
    const int64_t j_end = imin(imin(k_end, j0 + tile), d.causal ? i + 1 : d.k_len);
    for (int64_t j = j0; j < j_end; ++j) {
      const C s = scale * dot(qi, sk + (j - j0) * d.dim, d.dim);
      const C m_new = s > m ? s : m;
      const C alpha = att_exp(m - m_new), p = att_exp(s - m_new);
      l = l * alpha + p;
      const C* vj = sv + (j - j0) * d.v_dim;
      for (int64_t c = 0; c < d.v_dim; ++c) acc[c] = fma_rn(p, vj[c], acc[c] * alpha);
      m = m_new;
    }
  }
  if (!active) return;
  C* oi = o + ((b * d.q_len + i) * d.heads + h) * d.v_dim;
  const C inv = C(1) / l;
  for (int64_t c = 0; c < d.v_dim; ++c) oi[c] = acc[c] * inv;
  lse[(b * d.heads + h) * d.q_len + i] = m + att_log(l);
}

// dq: a thread per query; shared q [tile][dim], do [tile][v_dim], dq [tile][dim], k [tile][dim], v [tile][v_dim].
template <class C>
__global__ void dq_kernel(AttentionDims d, const C* q, const C* k, const C* v, const C* o, const C* lse, const C* d_o,
                          C* dq, int tile) {
  extern __shared__ __align__(16) unsigned char smem_bytes[];
  C* sq = reinterpret_cast<C*>(smem_bytes);
  C* sdo = sq + tile * d.dim;
  C* sdq = sdo + tile * d.v_dim;
  C* sk = sdq + tile * d.dim;
  C* sv = sk + tile * d.dim;
  const int64_t tiles = (d.q_len + tile - 1) / tile;
  const int64_t bh = blockIdx.x / tiles, b = bh / d.heads, h = bh % d.heads, i0 = blockIdx.x % tiles * tile;
  const int64_t i = i0 + threadIdx.x;
  const bool active = i < d.q_len;
  const C scale = static_cast<C>(d.scale);
  stage(sq, q, d, d.q_len, d.dim, b, h, i0, tile);
  stage(sdo, d_o, d, d.q_len, d.v_dim, b, h, i0, tile);
  C* acc = sdq + threadIdx.x * d.dim;
  for (int64_t c = 0; c < d.dim; ++c) acc[c] = 0;
  __syncthreads();
  const C* qi = sq + threadIdx.x * d.dim;
  const C* doi = sdo + threadIdx.x * d.v_dim;
  C lse_i = 0, delta = 0;
  if (active) {
    lse_i = lse[(b * d.heads + h) * d.q_len + i];
    delta = dot(doi, row_ptr(o, d, d.q_len, d.v_dim, b, h, i), d.v_dim);
  }
  const int64_t k_end = d.causal ? imin(d.k_len, i0 + tile) : d.k_len;
  for (int64_t j0 = 0; j0 < k_end; j0 += tile) {
    __syncthreads();
    stage(sk, k, d, d.k_len, d.dim, b, h, j0, tile);
    stage(sv, v, d, d.k_len, d.v_dim, b, h, j0, tile);
    __syncthreads();
    if (!active) continue;
    const int64_t j_end = imin(imin(k_end, j0 + tile), d.causal ? i + 1 : d.k_len);
    for (int64_t j = j0; j < j_end; ++j) {
      const C* kj = sk + (j - j0) * d.dim;
      const C p = att_exp(scale * dot(qi, kj, d.dim) - lse_i);
      const C ds = p * (dot(doi, sv + (j - j0) * d.v_dim, d.v_dim) - delta) * scale;
      for (int64_t c = 0; c < d.dim; ++c) acc[c] = fma_rn(ds, kj[c], acc[c]);
    }
  }
  if (!active) return;
  C* dqi = dq + ((b * d.q_len + i) * d.heads + h) * d.dim;
  for (int64_t c = 0; c < d.dim; ++c) dqi[c] = acc[c];
}

// dk and dv: a thread per key; shared k [tile][dim], v [tile][v_dim], dk [tile][dim], dv [tile][v_dim],
// q [tile][dim], do [tile][v_dim], lse [tile], delta [tile].
template <class C>
__global__ void dkv_kernel(AttentionDims d, const C* q, const C* k, const C* v, const C* o, const C* lse, const C* d_o,
                           C* dk, C* dv, int tile) {
  extern __shared__ __align__(16) unsigned char smem_bytes[];
  C* sk = reinterpret_cast<C*>(smem_bytes);
  C* sv = sk + tile * d.dim;
  C* sdk = sv + tile * d.v_dim;
  C* sdv = sdk + tile * d.dim;
  C* sq = sdv + tile * d.v_dim;
  C* sdo = sq + tile * d.dim;
  C* slse = sdo + tile * d.v_dim;
  C* sdelta = slse + tile;
  const int64_t tiles = (d.k_len + tile - 1) / tile;
  const int64_t bh = blockIdx.x / tiles, b = bh / d.heads, h = bh % d.heads, j0 = blockIdx.x % tiles * tile;
  const int64_t j = j0 + threadIdx.x;
  const bool active = j < d.k_len;
  const C scale = static_cast<C>(d.scale);
  stage(sk, k, d, d.k_len, d.dim, b, h, j0, tile);
  stage(sv, v, d, d.k_len, d.v_dim, b, h, j0, tile);
  C* dkj = sdk + threadIdx.x * d.dim;
  C* dvj = sdv + threadIdx.x * d.v_dim;
  for (int64_t c = 0; c < d.dim; ++c) dkj[c] = 0;
  for (int64_t c = 0; c < d.v_dim; ++c) dvj[c] = 0;
  const C* kj = sk + threadIdx.x * d.dim;
  const C* vj = sv + threadIdx.x * d.v_dim;
  // Causal: key j0 is seen from query j0 on.
  for (int64_t i0 = d.causal ? j0 : 0; i0 < d.q_len; i0 += tile) {
    __syncthreads();
    stage(sq, q, d, d.q_len, d.dim, b, h, i0, tile);
    stage(sdo, d_o, d, d.q_len, d.v_dim, b, h, i0, tile);
    const int64_t r = i0 + threadIdx.x;
    if (r < d.q_len) {
      slse[threadIdx.x] = lse[(b * d.heads + h) * d.q_len + r];
      sdelta[threadIdx.x] = dot(row_ptr(d_o, d, d.q_len, d.v_dim, b, h, r), row_ptr(o, d, d.q_len, d.v_dim, b, h, r),
                                d.v_dim);
    }
    __syncthreads();
    if (!active) continue;
    const int64_t i_end = imin(d.q_len, i0 + tile);
    for (int64_t i = d.causal ? (i0 > j ? i0 : j) : i0; i < i_end; ++i) {
      const C* qi = sq + (i - i0) * d.dim;
      const C* doi = sdo + (i - i0) * d.v_dim;
      const C p = att_exp(scale * dot(qi, kj, d.dim) - slse[i - i0]);
      for (int64_t c = 0; c < d.v_dim; ++c) dvj[c] = fma_rn(p, doi[c], dvj[c]);
      const C ds = p * (dot(doi, vj, d.v_dim) - sdelta[i - i0]) * scale;
      for (int64_t c = 0; c < d.dim; ++c) dkj[c] = fma_rn(ds, qi[c], dkj[c]);
    }
  }
  if (!active) return;
  C* dkg = dk + ((b * d.k_len + j) * d.heads + h) * d.dim;
  C* dvg = dv + ((b * d.k_len + j) * d.heads + h) * d.v_dim;
  for (int64_t c = 0; c < d.dim; ++c) dkg[c] = dkj[c];
  for (int64_t c = 0; c < d.v_dim; ++c) dvg[c] = dvj[c];
}

// The largest tile (a power of two up to kMaxTile) whose rows of `per_row` elements of C fit in kSharedBytes.
template <class C>
int tile_for(int64_t per_row) {
  int tile = kMaxTile;
  while (tile > 1 && static_cast<size_t>(tile) * per_row * sizeof(C) > kSharedBytes) tile /= 2;
  return tile;
}

int64_t blocks(int64_t rows, int tile, const AttentionDims& d) { return (rows + tile - 1) / tile * d.batch * d.heads; }

template <class C>
void forward_run(const AttentionDims& d, const void* q, const void* k, const void* v, void* o, void* lse,
                 cudaStream_t stream) {
  const int64_t per_row = 2 * d.dim + 2 * d.v_dim;
  const int tile = tile_for<C>(per_row);
  const int64_t n = blocks(d.q_len, tile, d);
  if (n == 0) return;
  forward_kernel<C><<<static_cast<unsigned>(n), tile, tile * per_row * sizeof(C), stream>>>(
      d, static_cast<const C*>(q), static_cast<const C*>(k), static_cast<const C*>(v), static_cast<C*>(o),
      static_cast<C*>(lse), tile);
}

template <class C>
void backward_run(const AttentionDims& d, const void* q, const void* k, const void* v, const void* o, const void* lse,
                  const void* d_o, void* dq, void* dk, void* dv, cudaStream_t stream) {
  const C *cq = static_cast<const C*>(q), *ck = static_cast<const C*>(k), *cv = static_cast<const C*>(v),
          *co = static_cast<const C*>(o), *clse = static_cast<const C*>(lse), *cdo = static_cast<const C*>(d_o);
  const int64_t dq_row = 3 * d.dim + 2 * d.v_dim;
  const int dq_tile = tile_for<C>(dq_row);
  if (const int64_t n = blocks(d.q_len, dq_tile, d); n > 0)
    dq_kernel<C><<<static_cast<unsigned>(n), dq_tile, dq_tile * dq_row * sizeof(C), stream>>>(
        d, cq, ck, cv, co, clse, cdo, static_cast<C*>(dq), dq_tile);
  const int64_t kv_row = 3 * d.dim + 3 * d.v_dim + 2;
  const int kv_tile = tile_for<C>(kv_row);
  if (const int64_t n = blocks(d.k_len, kv_tile, d); n > 0)
    dkv_kernel<C><<<static_cast<unsigned>(n), kv_tile, kv_tile * kv_row * sizeof(C), stream>>>(
        d, cq, ck, cv, co, clse, cdo, static_cast<C*>(dk), static_cast<C*>(dv), kv_tile);
}

}  // namespace

void fused_attention_launch(DT dt, const AttentionDims& d, const void* q, const void* k, const void* v, void* o,
                            void* lse, int device, cudaStream_t stream, const char* op) {
  if (dt == DT::F64)
    forward_run<double>(d, q, k, v, o, lse, stream);
  else
    forward_run<float>(d, q, k, v, o, lse, stream);
  after_launch(op, device);
}

void fused_attention_grad_launch(DT dt, const AttentionDims& d, const void* q, const void* k, const void* v,
                                 const void* o, const void* lse, const void* d_o, void* dq, void* dk, void* dv,
                                 int device, cudaStream_t stream, const char* op) {
  if (dt == DT::F64)
    backward_run<double>(d, q, k, v, o, lse, d_o, dq, dk, dv, stream);
  else
    backward_run<float>(d, q, k, v, o, lse, d_o, dq, dk, dv, stream);
  after_launch(op, device);
}

}  // namespace ember::cuda
