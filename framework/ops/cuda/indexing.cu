// CUDA kernels of the indexing ops. Indices are range-checked on the device by indexing_check_range, whose
// error is raised at the next host synchronisation, so the kernels here read and write only in bounds
// whatever the indices (a bad index gathers zeros and adds to no segment, as in TF's GPU kernels). Data moves
// as unsigned integers of the element size, except in unsorted_segment_sum, which accumulates as
// cpu/indexing.cpp does: in place for float/double/int32/int64 (integers through unsigned, so overflow
// wraps), in a float buffer for the half types and a uint32 one for uint8, rounded or truncated once.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "framework/ops/cuda/cuda_runtime.h"
#include "framework/ops/cuda/cuda_types.cuh"
#include "framework/ops/cuda/indexing_launch.h"

namespace ember::cuda {
namespace {

template <class E, class I>
__global__ void indexing_gather_kernel(const E* __restrict__ params, const I* __restrict__ idx, E* __restrict__ out,
                                       int64_t outer, int64_t n, int64_t k, int64_t inner, int64_t total) {
  EMBER_CUDA_GRID_STRIDE_LOOP(t, total) {
    const int64_t j = t % inner, row = t / inner;
    const int64_t ki = row % k, bo = row / k, bi = bo / outer;
    const int64_t pick = static_cast<int64_t>(idx[bi * k + ki]);
    out[t] = pick >= 0 && pick < n ? params[(bo * n + pick) * inner + j] : E{0};
  }
}

// The accumulator of a segment sum element type.
template <class T> struct IndexingSegAcc { using type = T; };
template <> struct IndexingSegAcc<__half> { using type = float; };
template <> struct IndexingSegAcc<__nv_bfloat16> { using type = float; };
template <> struct IndexingSegAcc<int32_t> { using type = unsigned; };
template <> struct IndexingSegAcc<int64_t> { using type = unsigned long long; };
template <> struct IndexingSegAcc<uint8_t> { using type = unsigned; };

template <class T, class A, class I>
__global__ void indexing_segment_atomic_kernel(const T* __restrict__ data, const I* __restrict__ ids, A* acc,
                                               int64_t rows, int64_t inner, int64_t segments) {
  EMBER_CUDA_GRID_STRIDE_LOOP(t, rows * inner) {
    const int64_t r = t / inner, c = t % inner;
    const int64_t s = static_cast<int64_t>(ids[r]);
    if (s >= 0 && s < segments) atomicAdd(acc + s * inner + c, static_cast<A>(load(data, t)));
  }
}

// A thread owns column c of the segments [s0, s1) and adds their rows in row order: deterministic, and the
// order the CPU kernel adds in.
template <class T, class A, class I>
__global__ void indexing_segment_ordered_kernel(const T* __restrict__ data, const I* __restrict__ ids, A* acc,
                                                int64_t rows, int64_t inner, int64_t segments, int64_t per_chunk,
                                                int64_t chunks) {
  EMBER_CUDA_GRID_STRIDE_LOOP(t, inner * chunks) {
    const int64_t c = t % inner, s0 = (t / inner) * per_chunk;
    const int64_t s1 = s0 + per_chunk < segments ? s0 + per_chunk : segments;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t s = static_cast<int64_t>(ids[r]);
      if (s >= s0 && s < s1) acc[s * inner + c] += static_cast<A>(load(data, r * inner + c));
    }
  }
}

template <class T, class A>
__global__ void indexing_segment_store_kernel(const A* acc, T* out, int64_t n) {
  EMBER_CUDA_GRID_STRIDE_LOOP(i, n) out[i] = to_storage<T>(acc[i]);
}

template <class T, class I>
void indexing_segment_run(const void* data_v, const void* ids_v, void* out_v, int64_t rows, int64_t inner,
                          int64_t segments, bool deterministic, int device, cudaStream_t stream, const char* op) {
  using A = typename IndexingSegAcc<T>::type;
  constexpr bool kInPlace = sizeof(A) == sizeof(T);  // float, double, int32, int64
  constexpr bool kFloating = std::is_floating_point<A>::value;
  const T* data = static_cast<const T*>(data_v);
  const I* ids = static_cast<const I*>(ids_v);
  T* out = static_cast<T*>(out_v);
  const int64_t count = segments * inner;
  A* acc = kInPlace ? reinterpret_cast<A*>(out)
                    : static_cast<A*>(workspace(device, static_cast<size_t>(count) * sizeof(A)));
  check(cudaMemsetAsync(acc, 0, static_cast<size_t>(count) * sizeof(A), stream), op);
  if (rows * inner > 0) {
    if (kFloating && deterministic) {
      // Split the segments into chunks only as far as needed to give the GPU some threads.
      const int64_t chunks = std::min<int64_t>(segments, std::max<int64_t>(1, (8192 + inner - 1) / inner));
      const int64_t per_chunk = (segments + chunks - 1) / chunks;
      indexing_segment_ordered_kernel<T, A, I><<<blocks_for(inner * chunks), kThreads, 0, stream>>>(
          data, ids, acc, rows, inner, segments, per_chunk, chunks);
    } else {
      indexing_segment_atomic_kernel<T, A, I><<<blocks_for(rows * inner), kThreads, 0, stream>>>(data, ids, acc,
                                                                                                 rows, inner, segments);
    }
    after_launch(op, device);
  }
  if constexpr (!kInPlace) {
    indexing_segment_store_kernel<T, A><<<blocks_for(count), kThreads, 0, stream>>>(acc, out, count);
    after_launch(op, device);
  }
}

template <class E, class I>
__global__ void indexing_one_hot_kernel(const I* __restrict__ idx, E* __restrict__ out, E on, E off, int64_t depth,
                                        int64_t inner, int64_t total) {
  EMBER_CUDA_GRID_STRIDE_LOOP(t, total) {
    const int64_t i = t % inner, rest = t / inner;
    const int64_t d = rest % depth, o = rest / depth;
    out[t] = static_cast<int64_t>(idx[o * inner + i]) == d ? on : off;
  }
}

template <class E>
__global__ void indexing_pad_kernel(const E* __restrict__ in, E* __restrict__ out, IndexingPadGeom g,
                                    IndexingPadMode mode, E cval, int64_t total) {
  EMBER_CUDA_GRID_STRIDE_LOOP(t, total) {
    int64_t rem = t, off = 0;
    bool constant = false;
    for (int d = g.rank - 1; d >= 0; --d) {
      const int64_t o = rem % g.out_size[d], dim = g.in_size[d];
      rem /= g.out_size[d];
      int64_t i = o - g.before[d];
      // One reflection suffices: the front end bounds REFLECT/SYMMETRIC paddings by the dimension.
      if (i < 0) {
        if (mode == IndexingPadMode::Constant) constant = true;
        i = mode == IndexingPadMode::Reflect ? -i : -i - 1;
      } else if (i >= dim) {
        if (mode == IndexingPadMode::Constant) constant = true;
        i = mode == IndexingPadMode::Reflect ? 2 * (dim - 1) - i : 2 * dim - 1 - i;
      }
      off += i * g.in_stride[d];
    }
    out[t] = constant ? cval : in[off];
  }
}

template <class F>
void indexing_by_size(int esize, F&& body) {
  switch (esize) {
    case 1: body(uint8_t{}); break;
    case 2: body(uint16_t{}); break;
    case 4: body(uint32_t{}); break;
    default: body(uint64_t{}); break;
  }
}

template <class F>
void indexing_by_index(DT dt, F&& body) {
  switch (dt) {
    case DT::I32: body(int32_t{}); break;
    case DT::I64: body(int64_t{}); break;
    default: body(uint8_t{}); break;
  }
}

template <class I>
__global__ void indexing_check_kernel(const I* __restrict__ idx, int64_t n, int64_t limit, unsigned long long* slot,
                                      unsigned long long tag) {
  constexpr unsigned long long kLastPosition = (1ULL << kCheckPositionBits) - 1;
  EMBER_CUDA_GRID_STRIDE_LOOP(t, n) {
    const int64_t v = static_cast<int64_t>(idx[t]);
    if (v < 0 || v >= limit) {
      const unsigned long long position = static_cast<unsigned long long>(t);
      atomicMin(slot, tag | (position < kLastPosition ? position : kLastPosition));
    }
  }
}

}  // namespace

void indexing_check_range(const void* indices, DT index_dt, int64_t n, int64_t limit, DeviceCheck check, int device,
                          cudaStream_t stream, const char* op) {
  if (n == 0) return;
  indexing_by_index(index_dt, [&](auto i) {
    using I = decltype(i);
    indexing_check_kernel<I><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const I*>(indices), n, limit,
                                                                      check.slot, check.tag);
  });
  after_launch(op, device);
}

void indexing_gather(const void* params, const void* indices, DT index_dt, void* out, int unit, int64_t batch,
                     int64_t outer, int64_t n, int64_t k, int64_t inner, int device, cudaStream_t stream,
                     const char* op) {
  const int64_t total = batch * outer * k * inner;
  if (total == 0) return;
  indexing_by_size(unit, [&](auto e) {
    using E = decltype(e);
    indexing_by_index(index_dt, [&](auto i) {
      using I = decltype(i);
      indexing_gather_kernel<E, I><<<blocks_for(total), kThreads, 0, stream>>>(
          static_cast<const E*>(params), static_cast<const I*>(indices), static_cast<E*>(out), outer, n, k, inner, total);
    });
  });
  after_launch(op, device);
}

void indexing_segment_sum(DT dt, const void* data, const void* ids, DT id_dt, void* out, int64_t rows, int64_t inner,
                          int64_t segments, bool deterministic, int device, cudaStream_t stream, const char* op) {
  if (segments * inner == 0) return;
  indexing_by_index(id_dt, [&](auto i) {
    using I = decltype(i);
    switch (dt) {
      EMBER_CUDA_CASE(F32, float, indexing_segment_run<scalar_t, I>(data, ids, out, rows, inner, segments,
                                                                    deterministic, device, stream, op))
      EMBER_CUDA_CASE(F64, double, indexing_segment_run<scalar_t, I>(data, ids, out, rows, inner, segments,
                                                                     deterministic, device, stream, op))
      EMBER_CUDA_CASE(F16, __half, indexing_segment_run<scalar_t, I>(data, ids, out, rows, inner, segments,
                                                                     deterministic, device, stream, op))
      EMBER_CUDA_CASE(BF16, __nv_bfloat16, indexing_segment_run<scalar_t, I>(data, ids, out, rows, inner, segments,
                                                                             deterministic, device, stream, op))
      EMBER_CUDA_CASE(I32, int32_t, indexing_segment_run<scalar_t, I>(data, ids, out, rows, inner, segments,
                                                                      deterministic, device, stream, op))
      EMBER_CUDA_CASE(I64, int64_t, indexing_segment_run<scalar_t, I>(data, ids, out, rows, inner, segments,
                                                                      deterministic, device, stream, op))
      EMBER_CUDA_CASE(U8, uint8_t, indexing_segment_run<scalar_t, I>(data, ids, out, rows, inner, segments,
                                                                     deterministic, device, stream, op))
      default: break;
    }
  });
}

void indexing_one_hot(const void* indices, DT index_dt, void* out, int esize, uint64_t on_bits, uint64_t off_bits,
                      int64_t outer, int64_t depth, int64_t inner, int device, cudaStream_t stream, const char* op) {
  const int64_t total = outer * depth * inner;
  if (total == 0) return;
  indexing_by_size(esize, [&](auto e) {
    using E = decltype(e);
    indexing_by_index(index_dt, [&](auto i) {
      using I = decltype(i);
      // The value's bits sit in the low bytes of the word (little-endian), so truncation extracts them.
      indexing_one_hot_kernel<E, I><<<blocks_for(total), kThreads, 0, stream>>>(
          static_cast<const I*>(indices), static_cast<E*>(out), static_cast<E>(on_bits), static_cast<E>(off_bits),
          depth, inner, total);
    });
  });
  after_launch(op, device);
}

void indexing_pad(const void* in, void* out, int esize, const IndexingPadGeom& g, IndexingPadMode mode,
                  uint64_t constant_bits, int device, cudaStream_t stream, const char* op) {
  int64_t total = 1;
  for (int d = 0; d < g.rank; ++d) total *= g.out_size[d];
  if (total == 0) return;
  indexing_by_size(esize, [&](auto e) {
    using E = decltype(e);
    indexing_pad_kernel<E><<<blocks_for(total), kThreads, 0, stream>>>(
        static_cast<const E*>(in), static_cast<E*>(out), g, mode, static_cast<E>(constant_bits), total);
  });
  after_launch(op, device);
}

}  // namespace ember::cuda
