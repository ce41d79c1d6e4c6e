// CUDA kernels of the reductions. Two shapes of work cover every axis set: "rows" when the innermost
// input dimension is reduced (a warp or a block per output, lanes striding over the reduced elements,
// then a shuffle tree) and "cols" when it is kept (a thread per output, so neighbouring threads read
// neighbouring elements). A long reduction with few outputs is split across blocks into partials that
// a second pass merges; every merge order is fixed, so results are deterministic run to run.
// Accumulators mirror cpu/reduce.cpp: float for half types, uint64 (wrapping) for integer sums and
// products, the compute type for max/min with NaN propagation.
#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>

#include "framework/ops/cuda/cuda_runtime.h"
#include "framework/ops/cuda/cuda_types.cuh"
#include "framework/ops/cuda/reduce_launch.h"

namespace ember::cuda {
namespace {

template <class T>
using reduce_wide_t = typename std::conditional<std::is_integral<T>::value, unsigned long long, compute_t<T>>::type;

template <class T>
struct ReduceSumOp {
  using in_t = T;
  using acc_t = reduce_wide_t<T>;
  __device__ static acc_t identity() { return acc_t(0); }
  __device__ static acc_t load(const T* p, int64_t i) { return static_cast<acc_t>(cuda::load(p, i)); }
  __device__ static acc_t merge(acc_t a, acc_t b) { return a + b; }
  __device__ static T finish(acc_t a, int64_t) { return to_storage<T>(a); }
};

template <class T>
struct ReduceMeanOp : ReduceSumOp<T> {
  using acc_t = reduce_wide_t<T>;
  __device__ static T finish(acc_t a, int64_t count) {
    if constexpr (std::is_integral<T>::value && std::is_signed<T>::value) {
      // The front end rejects an integer mean of nothing; the guard only avoids a device division by zero.
      return count > 0 ? static_cast<T>(static_cast<int64_t>(a) / count) : T(0);  // truncates toward zero
    } else if constexpr (std::is_integral<T>::value) {
      return count > 0 ? static_cast<T>(a / static_cast<unsigned long long>(count)) : T(0);
    } else {
      return to_storage<T>(a / static_cast<acc_t>(count));  // 0/0 = NaN for an empty mean
    }
  }
};

template <class T>
struct ReduceProdOp {
  using in_t = T;
  using acc_t = reduce_wide_t<T>;
  __device__ static acc_t identity() { return acc_t(1); }
  __device__ static acc_t load(const T* p, int64_t i) { return static_cast<acc_t>(cuda::load(p, i)); }
  __device__ static acc_t merge(acc_t a, acc_t b) { return a * b; }
  __device__ static T finish(acc_t a, int64_t) { return to_storage<T>(a); }
};

// A NaN partial is never replaced and a NaN input always wins, whatever the merge order.
template <class T, bool kMax>
struct ReduceExtremumOp {
  using in_t = T;
  using acc_t = compute_t<T>;
  static constexpr bool kNaN = !std::is_integral<acc_t>::value;
  __device__ static acc_t identity() {
    if constexpr (kNaN) {
      return kMax ? -std::numeric_limits<acc_t>::infinity() : std::numeric_limits<acc_t>::infinity();
    } else {
      return kMax ? std::numeric_limits<acc_t>::lowest() : std::numeric_limits<acc_t>::max();
    }
  }
  __device__ static acc_t load(const T* p, int64_t i) { return cuda::load(p, i); }
  __device__ static acc_t merge(acc_t a, acc_t b) {
    bool take = kMax ? (b > a) : (b < a);
    if constexpr (kNaN) take = (take || b != b) && a == a;
    return take ? b : a;
  }
  __device__ static T finish(acc_t a, int64_t) { return to_storage<T>(a); }
};

template <bool kAll>
struct ReduceLogicalOp {
  using in_t = bool;
  using acc_t = unsigned;
  __device__ static acc_t identity() { return kAll ? 1u : 0u; }
  __device__ static acc_t load(const bool* p, int64_t i) { return p[i] ? 1u : 0u; }
  __device__ static acc_t merge(acc_t a, acc_t b) { return kAll ? (a & b) : (a | b); }
  __device__ static bool finish(acc_t a, int64_t) { return a != 0; }
};

// Reads a raw input element (In = the op's input type) or a partial (In = acc_t).
template <class Op, class In>
__device__ __forceinline__ typename Op::acc_t reduce_ld(const In* p, int64_t i) {
  if constexpr (std::is_same<In, typename Op::acc_t>::value) {
    return p[i];
  } else {
    return Op::load(p, i);
  }
}

// Shuffles any 1-8 byte value through 32- or 64-bit words.
template <class A>
__device__ __forceinline__ A reduce_shfl_down(A v, int delta) {
  if constexpr (sizeof(A) == 8) {
    unsigned long long u;
    memcpy(&u, &v, 8);
    u = __shfl_down_sync(0xffffffffu, u, delta);
    memcpy(&v, &u, 8);
  } else {
    unsigned u = 0;
    memcpy(&u, &v, sizeof(A));
    u = __shfl_down_sync(0xffffffffu, u, delta);
    memcpy(&v, &u, sizeof(A));
  }
  return v;
}

// The warp's merged value, valid in lane 0.
template <class Op>
__device__ __forceinline__ typename Op::acc_t reduce_warp(typename Op::acc_t v) {
  for (int d = 16; d > 0; d >>= 1) v = Op::merge(v, reduce_shfl_down(v, d));
  return v;
}

// The block's merged value, valid in thread 0; every thread of the block must call it.
template <class Op>
__device__ typename Op::acc_t reduce_block(typename Op::acc_t v, typename Op::acc_t* smem) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = (blockDim.x + 31) / 32;
  v = reduce_warp<Op>(v);
  __syncthreads();  // smem may still be read from the previous row
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < warps ? smem[lane] : Op::identity();
    v = reduce_warp<Op>(v);
  }
  return v;
}

__device__ __forceinline__ int64_t reduce_kept_offset(const ReduceGeom& g, int64_t o) {
  int64_t off = 0;
  for (int d = g.n_kept - 1; d >= 0; --d) {
    const int64_t s = g.kept_size[d];
    off += (o % s) * g.kept_stride[d];
    o /= s;
  }
  return off;
}

__device__ __forceinline__ int64_t reduce_red_offset(const ReduceGeom& g, int64_t r) {
  int64_t off = 0;
  for (int d = g.n_red - 1; d >= 0; --d) {
    const int64_t s = g.red_size[d];
    off += (r % s) * g.red_stride[d];
    r /= s;
  }
  return off;
}

// Logical row lr = (output o, split s) reduces elements [s * chunk, (s + 1) * chunk) of output o's
// g.count; with `partial` set it stores the accumulator at partial[lr], else out[o] = finish(acc, finish_count).
template <class Op, class In, bool kWarp>
__global__ void reduce_rows_kernel(const In* in, typename Op::acc_t* partial, typename Op::in_t* out, ReduceGeom g,
                                   int64_t splits, int64_t chunk, int64_t finish_count) {
  using A = typename Op::acc_t;
  __shared__ A smem[32];
  const int lanes = kWarp ? 32 : static_cast<int>(blockDim.x);
  const int lane = kWarp ? static_cast<int>(threadIdx.x % 32) : static_cast<int>(threadIdx.x);
  const int64_t per_block = kWarp ? blockDim.x / 32 : 1;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * per_block + (kWarp ? threadIdx.x / 32 : 0);
  const int64_t step = static_cast<int64_t>(gridDim.x) * per_block, rows = g.n_out * splits;
  for (int64_t lr = first; lr < rows; lr += step) {
    const int64_t o = lr / splits, s = lr % splits;
    const int64_t r0 = s * chunk, r1 = r0 + chunk < g.count ? r0 + chunk : g.count;
    const int64_t base = reduce_kept_offset(g, o);
    A acc = Op::identity();
    if (g.n_red == 1) {
      const int64_t st = g.red_stride[0];
      for (int64_t r = r0 + lane; r < r1; r += lanes) acc = Op::merge(acc, reduce_ld<Op>(in, base + r * st));
    } else {
      for (int64_t r = r0 + lane; r < r1; r += lanes)
        acc = Op::merge(acc, reduce_ld<Op>(in, base + reduce_red_offset(g, r)));
    }
    acc = kWarp ? reduce_warp<Op>(acc) : reduce_block<Op>(acc, smem);
    if (lane == 0) {
      if (partial != nullptr) {
        partial[lr] = acc;
      } else {
        out[o] = Op::finish(acc, finish_count);
      }
    }
  }
}

// A thread per output; blockIdx.y picks the split of the reduced range (partials as in the rows kernel).
template <class Op>
__global__ void reduce_cols_kernel(const typename Op::in_t* in, typename Op::acc_t* partial, typename Op::in_t* out,
                                   ReduceGeom g, int64_t splits, int64_t chunk) {
  using A = typename Op::acc_t;
  const int64_t s = blockIdx.y;
  const int64_t r0 = s * chunk, r1 = r0 + chunk < g.count ? r0 + chunk : g.count;
  EMBER_CUDA_GRID_STRIDE_LOOP(o, g.n_out) {
    const int64_t base = reduce_kept_offset(g, o);
    A acc = Op::identity();
    if (g.n_red == 1) {
      const int64_t st = g.red_stride[0];
      for (int64_t r = r0; r < r1; ++r) acc = Op::merge(acc, Op::load(in, base + r * st));
    } else if (r0 < r1) {
      int64_t idx[kReduceMaxDims];
      int64_t off = 0, rem = r0;
      for (int d = g.n_red - 1; d >= 0; --d) {
        idx[d] = rem % g.red_size[d];
        rem /= g.red_size[d];
        off += idx[d] * g.red_stride[d];
      }
      for (int64_t r = r0; r < r1; ++r) {
        acc = Op::merge(acc, Op::load(in, base + off));
        for (int d = g.n_red - 1; d >= 0; --d) {
          off += g.red_stride[d];
          if (++idx[d] < g.red_size[d]) break;
          off -= g.red_stride[d] * g.red_size[d];
          idx[d] = 0;
        }
      }
    }
    if (partial != nullptr) {
      partial[o * splits + s] = acc;
    } else {
      out[o] = Op::finish(acc, g.count);
    }
  }
}

template <class Op>
__global__ void reduce_fill_kernel(typename Op::in_t* out, int64_t n) {
  EMBER_CUDA_GRID_STRIDE_LOOP(i, n)
    out[i] = Op::finish(Op::identity(), 0);
}

int64_t reduce_ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

template <class Op>
void reduce_run(const void* in_v, void* out_v, const ReduceGeom& g, int device, cudaStream_t stream, const char* op) {
  using T = typename Op::in_t;
  using A = typename Op::acc_t;
  const T* in = static_cast<const T*>(in_v);
  T* out = static_cast<T*>(out_v);
  const int64_t n_out = g.n_out, count = g.count;
  if (n_out == 0) return;
  if (count == 0) {
    reduce_fill_kernel<Op><<<blocks_for(n_out), kThreads, 0, stream>>>(out, n_out);
    after_launch(op, device);
    return;
  }
  // The partials' merge pass: one warp per output over its `splits` contiguous partials.
  auto merge_partials = [&](const A* partial, int64_t splits) {
    ReduceGeom f;
    f.n_kept = 1;
    f.kept_size[0] = n_out;
    f.kept_stride[0] = splits;
    f.n_red = 1;
    f.red_size[0] = splits;
    f.red_stride[0] = 1;
    f.n_out = n_out;
    f.count = splits;
    reduce_rows_kernel<Op, A, true><<<blocks_for(n_out * 32), kThreads, 0, stream>>>(partial, nullptr, out, f, 1,
                                                                                     splits, count);
    after_launch(op, device);
  };

  const bool rows_mode = g.n_red > 0 && g.red_stride[g.n_red - 1] == 1;
  if (rows_mode) {
    if (count <= 1024) {
      reduce_rows_kernel<Op, T, true><<<blocks_for(n_out * 32), kThreads, 0, stream>>>(in, nullptr, out, g, 1, count,
                                                                                       count);
      after_launch(op, device);
      return;
    }
    // Few long rows: split each across blocks so the whole GPU streams the input.
    int64_t splits = 1;
    if (n_out < 256 && count >= 16384) splits = std::min(reduce_ceil_div(1024, n_out), reduce_ceil_div(count, 8192));
    if (splits == 1) {
      reduce_rows_kernel<Op, T, false><<<blocks_for(n_out, 1), kThreads, 0, stream>>>(in, nullptr, out, g, 1, count,
                                                                                      count);
      after_launch(op, device);
      return;
    }
    const int64_t chunk = reduce_ceil_div(count, splits);
    splits = reduce_ceil_div(count, chunk);
    A* partial = static_cast<A*>(workspace(device, static_cast<size_t>(n_out * splits) * sizeof(A)));
    reduce_rows_kernel<Op, T, false><<<blocks_for(n_out * splits, 1), kThreads, 0, stream>>>(in, partial, out, g,
                                                                                             splits, chunk, count);
    after_launch(op, device);
    merge_partials(partial, splits);
    return;
  }

  // Columns: split the reduced range when there are too few outputs to occupy the GPU.
  int64_t splits = 1;
  if (n_out < 65536 && count >= 64)
    splits = std::min(std::min(reduce_ceil_div(65536, n_out), reduce_ceil_div(count, 32)), int64_t{65535});
  const int64_t chunk = reduce_ceil_div(count, splits);
  splits = reduce_ceil_div(count, chunk);  // no empty trailing split
  const dim3 grid(blocks_for(n_out), static_cast<unsigned>(splits));
  if (splits == 1) {
    reduce_cols_kernel<Op><<<grid, kThreads, 0, stream>>>(in, nullptr, out, g, 1, chunk);
    after_launch(op, device);
    return;
  }
  A* partial = static_cast<A*>(workspace(device, static_cast<size_t>(n_out * splits) * sizeof(A)));
  reduce_cols_kernel<Op><<<grid, kThreads, 0, stream>>>(in, partial, out, g, splits, chunk);
  after_launch(op, device);
  merge_partials(partial, splits);
}

// argmax/argmin: the first index on ties; a NaN beats every number and the first NaN wins (cpu/reduce.cpp).
template <class T, bool kMax>
struct ReduceArgOp {
  using C = compute_t<T>;
  static constexpr bool kNaN = !std::is_integral<C>::value;
  // Whether (vb, ib) should replace (va, ia).
  __device__ static bool better(C va, int64_t ia, C vb, int64_t ib) {
    if constexpr (kNaN) {
      const bool na = va != va, nb = vb != vb;
      if (na || nb) return nb && (!na || ib < ia);
    }
    if (kMax ? (vb > va) : (vb < va)) return true;
    return vb == va && ib < ia;
  }
  __device__ static C identity() { return ReduceExtremumOp<T, kMax>::identity(); }
};

template <class T, class Idx, bool kMax, bool kWarp>
__global__ void reduce_arg_rows_kernel(const T* in, Idx* out, int64_t rows, int64_t red) {
  using Op = ReduceArgOp<T, kMax>;
  using C = typename Op::C;
  __shared__ C sv[32];
  __shared__ int64_t si[32];
  const int lanes = kWarp ? 32 : static_cast<int>(blockDim.x);
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int tid = kWarp ? lane : static_cast<int>(threadIdx.x);
  const int64_t per_block = kWarp ? blockDim.x / 32 : 1;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * per_block + (kWarp ? threadIdx.x / 32 : 0);
  const int64_t step = static_cast<int64_t>(gridDim.x) * per_block;
  auto warp_merge = [&](C& v, int64_t& i) {
    for (int d = 16; d > 0; d >>= 1) {
      const C ov = reduce_shfl_down(v, d);
      const int64_t oi = reduce_shfl_down(i, d);
      if (Op::better(v, i, ov, oi)) {
        v = ov;
        i = oi;
      }
    }
  };
  for (int64_t row = first; row < rows; row += step) {
    const T* p = in + row * red;
    C v = Op::identity();
    int64_t i = std::numeric_limits<int64_t>::max();  // loses every tie, so an idle lane never wins
    for (int64_t r = tid; r < red; r += lanes) {
      const C x = load(p, r);
      if (Op::better(v, i, x, r)) {
        v = x;
        i = r;
      }
    }
    warp_merge(v, i);
    if constexpr (!kWarp) {
      const int warp = threadIdx.x / 32, warps = (blockDim.x + 31) / 32;
      __syncthreads();
      if (lane == 0) {
        sv[warp] = v;
        si[warp] = i;
      }
      __syncthreads();
      if (warp == 0) {
        v = lane < warps ? sv[lane] : Op::identity();
        i = lane < warps ? si[lane] : std::numeric_limits<int64_t>::max();
        warp_merge(v, i);
      }
    }
    if (tid == 0) out[row] = static_cast<Idx>(i);
  }
}

template <class T, class Idx, bool kMax>
__global__ void reduce_arg_cols_kernel(const T* in, Idx* out, int64_t outer, int64_t red, int64_t inner) {
  using Op = ReduceArgOp<T, kMax>;
  using C = typename Op::C;
  EMBER_CUDA_GRID_STRIDE_LOOP(t, outer * inner) {
    const int64_t o = t / inner, j = t % inner;
    const T* p = in + o * red * inner + j;
    C v = load(p, 0);
    int64_t i = 0;
    for (int64_t r = 1; r < red; ++r) {
      const C x = load(p, r * inner);
      if (Op::better(v, i, x, r)) {
        v = x;
        i = r;
      }
    }
    out[t] = static_cast<Idx>(i);
  }
}

template <class T, class Idx, bool kMax>
void reduce_arg_run(const void* in_v, void* out_v, int64_t outer, int64_t red, int64_t inner, int device,
                    cudaStream_t stream, const char* op) {
  const T* in = static_cast<const T*>(in_v);
  Idx* out = static_cast<Idx*>(out_v);
  if (outer * inner == 0 || red == 0) return;
  if (inner == 1) {
    if (red <= 1024) {
      reduce_arg_rows_kernel<T, Idx, kMax, true><<<blocks_for(outer * 32), kThreads, 0, stream>>>(in, out, outer, red);
    } else {
      reduce_arg_rows_kernel<T, Idx, kMax, false><<<blocks_for(outer, 1), kThreads, 0, stream>>>(in, out, outer, red);
    }
  } else {
    reduce_arg_cols_kernel<T, Idx, kMax><<<blocks_for(outer * inner), kThreads, 0, stream>>>(in, out, outer, red, inner);
  }
  after_launch(op, device);
}

}  // namespace

void reduce_launch(ReduceKind kind, DT dt, const void* in, void* out, const ReduceGeom& g, int device,
                   cudaStream_t stream, const char* op) {
  switch (kind) {
    case ReduceKind::Sum:
      EMBER_CUDA_DISPATCH_NUMERIC(dt, reduce_run<ReduceSumOp<scalar_t>>(in, out, g, device, stream, op));
      break;
    case ReduceKind::Mean:
      EMBER_CUDA_DISPATCH_NUMERIC(dt, reduce_run<ReduceMeanOp<scalar_t>>(in, out, g, device, stream, op));
      break;
    case ReduceKind::Max:
      EMBER_CUDA_DISPATCH_NUMERIC(dt, reduce_run<ReduceExtremumOp<scalar_t, true>>(in, out, g, device, stream, op));
      break;
    case ReduceKind::Min:
      EMBER_CUDA_DISPATCH_NUMERIC(dt, reduce_run<ReduceExtremumOp<scalar_t, false>>(in, out, g, device, stream, op));
      break;
    case ReduceKind::Prod:
      EMBER_CUDA_DISPATCH_NUMERIC(dt, reduce_run<ReduceProdOp<scalar_t>>(in, out, g, device, stream, op));
      break;
    case ReduceKind::All:
      reduce_run<ReduceLogicalOp<true>>(in, out, g, device, stream, op);
      break;
    case ReduceKind::Any:
      reduce_run<ReduceLogicalOp<false>>(in, out, g, device, stream, op);
      break;
  }
}

void reduce_arg_launch(bool is_max, DT dt, DT index_dt, const void* in, void* out, int64_t outer, int64_t red,
                       int64_t inner, int device, cudaStream_t stream, const char* op) {
  EMBER_CUDA_DISPATCH_NUMERIC(dt, {
    if (index_dt == DT::I32) {
      if (is_max) reduce_arg_run<scalar_t, int32_t, true>(in, out, outer, red, inner, device, stream, op);
      else reduce_arg_run<scalar_t, int32_t, false>(in, out, outer, red, inner, device, stream, op);
    } else {
      if (is_max) reduce_arg_run<scalar_t, int64_t, true>(in, out, outer, red, inner, device, stream, op);
      else reduce_arg_run<scalar_t, int64_t, false>(in, out, outer, red, inner, device, stream, op);
    }
  });
}

}  // namespace ember::cuda
