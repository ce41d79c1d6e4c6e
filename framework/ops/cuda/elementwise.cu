// CUDA kernels of the elementwise ops. The math is functors.h's, the same functors the CPU loops call, applied
// to the compute type (float for the half types: load, one functor call, one rounding back to storage, as the
// CPU's Unary/Binary wrappers do), so the CPU tests cover the arithmetic. Grid-stride loops, int64 indices.
#include <cstdint>
#include <type_traits>

#include "framework/ops/cuda/cuda_runtime.h"
#include "framework/ops/cuda/cuda_types.cuh"
#include "framework/ops/cuda/elementwise_launch.h"
#include "framework/ops/functors.h"

namespace ember::cuda {
namespace {

// Operand offsets of output element i under a collapsed broadcast plan (dimension 0 innermost). The loop is
// unrolled over the fixed maximum so that `index` (a kernel parameter) is read at constant offsets.
template <int N>
__device__ __forceinline__ void ew_offsets(const BroadcastIndex& index, int64_t i, int64_t (&off)[N]) {
#pragma unroll
  for (int k = 0; k < N; ++k) off[k] = 0;
  int64_t r = i;
#pragma unroll
  for (int d = 0; d < kMaxBroadcastDims; ++d) {
    if (d == index.rank) break;
    const int64_t q = r / index.dims[d];
    const int64_t c = r - q * index.dims[d];
    r = q;
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] += c * index.strides[d][k];
  }
}

// ---- unary ----

template <class T, class Out, class F>
__global__ void ew_unary_kernel(const T* __restrict__ x, Out* __restrict__ y, int64_t n, F f) {
  EMBER_CUDA_GRID_STRIDE_LOOP(i, n) y[i] = to_storage<Out>(f(load(x, i)));
}

template <class T, class Out, class F>
void ew_unary_run(const void* x, void* y, int64_t n, F f, cudaStream_t stream) {
  ew_unary_kernel<T, Out, F><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<Out*>(y),
                                                                       n, f);
}

// ---- binary ----

// sa, sb are 0 (a scalar operand, read at element 0) or 1 (a full operand).
template <class T, class Out, class F>
__global__ void ew_binary_flat_kernel(const T* __restrict__ a, int64_t sa, const T* __restrict__ b, int64_t sb,
                                      Out* __restrict__ z, int64_t n, F f) {
  EMBER_CUDA_GRID_STRIDE_LOOP(i, n)
    z[i] = to_storage<Out>(f(load(a, i * sa), load(b, i * sb)));
}

template <class T, class Out, class F>
__global__ void ew_binary_broadcast_kernel(const T* __restrict__ a, const T* __restrict__ b, Out* __restrict__ z,
                                           int64_t n, BroadcastIndex index, F f) {
  EMBER_CUDA_GRID_STRIDE_LOOP(i, n) {
    int64_t off[2];
    ew_offsets<2>(index, i, off);
    z[i] = to_storage<Out>(f(load(a, off[0]), load(b, off[1])));
  }
}

// Whether the plan is one dimension over which every operand is full (stride 1) or a scalar (stride 0).
bool ew_is_flat(const BroadcastIndex& index, int operands) {
  if (index.rank != 1) return false;
  for (int k = 0; k < operands; ++k)
    if (index.strides[0][k] != 0 && index.strides[0][k] != 1) return false;
  return true;
}

template <class T, class Out, class F>
void ew_binary_run(const void* a, const void* b, void* z, int64_t n, const BroadcastIndex& index, F f,
                   cudaStream_t stream) {
  const T* pa = static_cast<const T*>(a);
  const T* pb = static_cast<const T*>(b);
  Out* pz = static_cast<Out*>(z);
  if (ew_is_flat(index, 2)) {
    ew_binary_flat_kernel<T, Out, F><<<blocks_for(n), kThreads, 0, stream>>>(pa, index.strides[0][0], pb,
                                                                              index.strides[0][1], pz, n, f);
  } else {
    ew_binary_broadcast_kernel<T, Out, F><<<blocks_for(n), kThreads, 0, stream>>>(pa, pb, pz, n, index, f);
  }
}

// The CPU rejects an integer divisor of 0 before its loop (reading the divisor on the host); here the divisor
// lives on the device and a kernel function must not synchronise to read it, so such elements get a defined 0
// instead of the hardware's arbitrary quotient. Floating types pass straight through to the functor.
template <class F>
struct EwIntegerDivisorGuard {
  F f;
  template <class T>
  __device__ T operator()(T a, T b) const {
    if constexpr (std::is_integral<T>::value) {
      if (b == T(0)) return T(0);
    }
    return f(a, b);
  }
};

// ---- ternary ----

template <class A, class B, class C, class Out, class F>
__global__ void ew_ternary_flat_kernel(const A* __restrict__ a, int64_t sa, const B* __restrict__ b, int64_t sb,
                                       const C* __restrict__ c, int64_t sc, Out* __restrict__ z, int64_t n, F f) {
  EMBER_CUDA_GRID_STRIDE_LOOP(i, n)
    z[i] = to_storage<Out>(f(load(a, i * sa), load(b, i * sb), load(c, i * sc)));
}

template <class A, class B, class C, class Out, class F>
__global__ void ew_ternary_broadcast_kernel(const A* __restrict__ a, const B* __restrict__ b,
                                            const C* __restrict__ c, Out* __restrict__ z, int64_t n,
                                            BroadcastIndex index, F f) {
  EMBER_CUDA_GRID_STRIDE_LOOP(i, n) {
    int64_t off[3];
    ew_offsets<3>(index, i, off);
    z[i] = to_storage<Out>(f(load(a, off[0]), load(b, off[1]), load(c, off[2])));
  }
}

template <class A, class B, class C, class Out, class F>
void ew_ternary_run(const void* a, const void* b, const void* c, void* z, int64_t n, const BroadcastIndex& index,
                    F f, cudaStream_t stream) {
  const A* pa = static_cast<const A*>(a);
  const B* pb = static_cast<const B*>(b);
  const C* pc = static_cast<const C*>(c);
  Out* pz = static_cast<Out*>(z);
  if (ew_is_flat(index, 3)) {
    ew_ternary_flat_kernel<A, B, C, Out, F><<<blocks_for(n), kThreads, 0, stream>>>(
        pa, index.strides[0][0], pb, index.strides[0][1], pc, index.strides[0][2], pz, n, f);
  } else {
    ew_ternary_broadcast_kernel<A, B, C, Out, F><<<blocks_for(n), kThreads, 0, stream>>>(pa, pb, pc, pz, n, index, f);
  }
}

// ---- dtype sets (those of the CPU registrations) ----

#define EW_CASES_FLOAT(...) EMBER_CUDA_CASES_FLOATING(__VA_ARGS__)
#define EW_CASES_SIGNED(...)                         \
  EW_CASES_FLOAT(__VA_ARGS__)                        \
  EMBER_CUDA_CASE(I32, int32_t, __VA_ARGS__)         \
  EMBER_CUDA_CASE(I64, int64_t, __VA_ARGS__)
#define EW_CASES_NUMERIC(...) EMBER_CUDA_CASES_NUMERIC(__VA_ARGS__)
#define EW_CASES_ALL(...) EMBER_CUDA_CASES_ALL(__VA_ARGS__)
// Runs the body with scalar_t bound to dt's storage type and returns true; false for a dt outside SET.
#define EW_DISPATCH(SET, dt, ...)  \
  switch (dt) {                    \
    EW_CASES_##SET(__VA_ARGS__)    \
    default: return false;         \
  }                                \
  return true

template <class F>
bool ew_unary_signed(F f, DT dt, const void* x, void* y, int64_t n, cudaStream_t s) {
  EW_DISPATCH(SIGNED, dt, ew_unary_run<scalar_t, scalar_t>(x, y, n, f, s));
}
template <class F>
bool ew_unary_float(F f, DT dt, const void* x, void* y, int64_t n, cudaStream_t s) {
  EW_DISPATCH(FLOAT, dt, ew_unary_run<scalar_t, scalar_t>(x, y, n, f, s));
}

template <class From>
bool ew_cast_from(DT to, const void* x, void* y, int64_t n, cudaStream_t s) {
  EW_DISPATCH(ALL, to, ew_unary_run<From, scalar_t>(x, y, n, functors::CastTo<compute_t<scalar_t>>{}, s));
}

// Binary helpers: SAME writes the operands' dtype, BOOL writes bool (comparisons).
#define EW_BINARY_ARGS DT dt, const void* a, const void* b, void* z, int64_t n, const BroadcastIndex& ix, cudaStream_t s
template <class F>
bool ew_binary_numeric(F f, EW_BINARY_ARGS) {
  EW_DISPATCH(NUMERIC, dt, ew_binary_run<scalar_t, scalar_t>(a, b, z, n, ix, f, s));
}
template <class F>
bool ew_binary_signed(F f, EW_BINARY_ARGS) {
  EW_DISPATCH(SIGNED, dt, ew_binary_run<scalar_t, scalar_t>(a, b, z, n, ix, f, s));
}
template <class F>
bool ew_binary_float(F f, EW_BINARY_ARGS) {
  EW_DISPATCH(FLOAT, dt, ew_binary_run<scalar_t, scalar_t>(a, b, z, n, ix, f, s));
}
template <class F>
bool ew_compare_numeric(F f, EW_BINARY_ARGS) {
  EW_DISPATCH(NUMERIC, dt, ew_binary_run<scalar_t, bool>(a, b, z, n, ix, f, s));
}
template <class F>
bool ew_compare_all(F f, EW_BINARY_ARGS) {
  EW_DISPATCH(ALL, dt, ew_binary_run<scalar_t, bool>(a, b, z, n, ix, f, s));
}
template <class F>
bool ew_binary_logical(F f, EW_BINARY_ARGS) {
  if (dt != DT::Bool) return false;
  ew_binary_run<bool, bool>(a, b, z, n, ix, f, s);
  return true;
}

}  // namespace

bool launch_unary(UnaryOp op, DT dt, const void* x, void* y, int64_t n, cudaStream_t s) {
  namespace fn = ::ember::functors;
  switch (op) {
    case UnaryOp::Neg: return ew_unary_signed(fn::Neg{}, dt, x, y, n, s);
    case UnaryOp::Abs: return ew_unary_signed(fn::Abs{}, dt, x, y, n, s);
    case UnaryOp::Sign: return ew_unary_signed(fn::Sign{}, dt, x, y, n, s);
    case UnaryOp::Square: return ew_unary_signed(fn::Square{}, dt, x, y, n, s);
    case UnaryOp::Relu: return ew_unary_signed(fn::Relu{}, dt, x, y, n, s);
    case UnaryOp::Relu6: return ew_unary_signed(fn::Relu6{}, dt, x, y, n, s);
    case UnaryOp::Exp: return ew_unary_float(fn::Exp{}, dt, x, y, n, s);
    case UnaryOp::Log: return ew_unary_float(fn::Log{}, dt, x, y, n, s);
    case UnaryOp::Log1p: return ew_unary_float(fn::Log1p{}, dt, x, y, n, s);
    case UnaryOp::Sqrt: return ew_unary_float(fn::Sqrt{}, dt, x, y, n, s);
    case UnaryOp::Rsqrt: return ew_unary_float(fn::Rsqrt{}, dt, x, y, n, s);
    case UnaryOp::Reciprocal: return ew_unary_float(fn::Reciprocal{}, dt, x, y, n, s);
    case UnaryOp::Sin: return ew_unary_float(fn::Sin{}, dt, x, y, n, s);
    case UnaryOp::Cos: return ew_unary_float(fn::Cos{}, dt, x, y, n, s);
    case UnaryOp::Tanh: return ew_unary_float(fn::Tanh{}, dt, x, y, n, s);
    case UnaryOp::Sigmoid: return ew_unary_float(fn::Sigmoid{}, dt, x, y, n, s);
    case UnaryOp::Elu: return ew_unary_float(fn::Elu{}, dt, x, y, n, s);
    case UnaryOp::Selu: return ew_unary_float(fn::Selu{}, dt, x, y, n, s);
    case UnaryOp::Gelu: return ew_unary_float(fn::Gelu{false}, dt, x, y, n, s);
    case UnaryOp::GeluApproximate: return ew_unary_float(fn::Gelu{true}, dt, x, y, n, s);
    case UnaryOp::Softplus: return ew_unary_float(fn::Softplus{}, dt, x, y, n, s);
    case UnaryOp::Softsign: return ew_unary_float(fn::Softsign{}, dt, x, y, n, s);
    case UnaryOp::Swish: return ew_unary_float(fn::Swish{}, dt, x, y, n, s);
    case UnaryOp::Floor: return ew_unary_float(fn::Floor{}, dt, x, y, n, s);
    case UnaryOp::Ceil: return ew_unary_float(fn::Ceil{}, dt, x, y, n, s);
    case UnaryOp::Round: return ew_unary_float(fn::Round{}, dt, x, y, n, s);
    case UnaryOp::IsFinite: {
      EW_DISPATCH(FLOAT, dt, ew_unary_run<scalar_t, bool>(x, y, n, fn::IsFinite{}, s));
    }
    case UnaryOp::LogicalNot:
      if (dt != DT::Bool) return false;
      ew_unary_run<bool, bool>(x, y, n, fn::LogicalNot{}, s);
      return true;
  }
  return false;
}

bool launch_cast(DT from, DT to, const void* x, void* y, int64_t n, cudaStream_t s) {
  EW_DISPATCH(ALL, from, if (!ew_cast_from<scalar_t>(to, x, y, n, s)) return false);
}

bool launch_binary(BinaryOp op, DT dt, const void* a, const void* b, void* z, int64_t n, const BroadcastIndex& ix,
                   cudaStream_t s) {
  namespace fn = ::ember::functors;
  switch (op) {
    case BinaryOp::Add: return ew_binary_numeric(fn::Add{}, dt, a, b, z, n, ix, s);
    case BinaryOp::Sub: return ew_binary_numeric(fn::Sub{}, dt, a, b, z, n, ix, s);
    case BinaryOp::Mul: return ew_binary_numeric(fn::Mul{}, dt, a, b, z, n, ix, s);
    case BinaryOp::Div: return ew_binary_numeric(EwIntegerDivisorGuard<fn::Div>{}, dt, a, b, z, n, ix, s);
    case BinaryOp::FloorDiv:
      return ew_binary_numeric(EwIntegerDivisorGuard<fn::FloorDiv>{}, dt, a, b, z, n, ix, s);
    case BinaryOp::Mod: return ew_binary_numeric(EwIntegerDivisorGuard<fn::Mod>{}, dt, a, b, z, n, ix, s);
    case BinaryOp::Maximum: return ew_binary_numeric(fn::Maximum{}, dt, a, b, z, n, ix, s);
    case BinaryOp::Minimum: return ew_binary_numeric(fn::Minimum{}, dt, a, b, z, n, ix, s);
    case BinaryOp::Pow: return ew_binary_signed(fn::Pow{}, dt, a, b, z, n, ix, s);
    case BinaryOp::SquaredDifference: return ew_binary_signed(fn::SquaredDifference{}, dt, a, b, z, n, ix, s);
    case BinaryOp::ReluGrad: return ew_binary_signed(fn::ReluGrad{}, dt, a, b, z, n, ix, s);
    case BinaryOp::DivNoNan: return ew_binary_float(fn::DivNoNan{}, dt, a, b, z, n, ix, s);
    case BinaryOp::Equal: return ew_compare_all(fn::Equal{}, dt, a, b, z, n, ix, s);
    case BinaryOp::NotEqual: return ew_compare_all(fn::NotEqual{}, dt, a, b, z, n, ix, s);
    case BinaryOp::Less: return ew_compare_numeric(fn::Less{}, dt, a, b, z, n, ix, s);
    case BinaryOp::LessEqual: return ew_compare_numeric(fn::LessEqual{}, dt, a, b, z, n, ix, s);
    case BinaryOp::Greater: return ew_compare_numeric(fn::Greater{}, dt, a, b, z, n, ix, s);
    case BinaryOp::GreaterEqual: return ew_compare_numeric(fn::GreaterEqual{}, dt, a, b, z, n, ix, s);
    case BinaryOp::LogicalAnd: return ew_binary_logical(fn::LogicalAnd{}, dt, a, b, z, n, ix, s);
    case BinaryOp::LogicalOr: return ew_binary_logical(fn::LogicalOr{}, dt, a, b, z, n, ix, s);
  }
  return false;
}

// where selects stored bits, as the CPU does: one instantiation per element size serves every dtype (and
// keeps NaN payloads, which a round trip through float would not for the half types).
bool launch_where(int element_size, const void* cond, const void* a, const void* b, void* z, int64_t n,
                  const BroadcastIndex& ix, cudaStream_t s) {
  const functors::Where f{};
  switch (element_size) {
    case 1: ew_ternary_run<bool, uint8_t, uint8_t, uint8_t>(cond, a, b, z, n, ix, f, s); return true;
    case 2: ew_ternary_run<bool, uint16_t, uint16_t, uint16_t>(cond, a, b, z, n, ix, f, s); return true;
    case 4: ew_ternary_run<bool, uint32_t, uint32_t, uint32_t>(cond, a, b, z, n, ix, f, s); return true;
    case 8: ew_ternary_run<bool, uint64_t, uint64_t, uint64_t>(cond, a, b, z, n, ix, f, s); return true;
    default: return false;
  }
}

bool launch_clip_by_value(DT dt, const void* x, const void* lo, const void* hi, void* z, int64_t n,
                          const BroadcastIndex& ix, cudaStream_t s) {
  EW_DISPATCH(NUMERIC, dt,
              ew_ternary_run<scalar_t, scalar_t, scalar_t, scalar_t>(x, lo, hi, z, n, ix, functors::ClipByValue{}, s));
}

}  // namespace ember::cuda
