#pragma once
// Host launchers of the elementwise kernels (elementwise.cu): the unary ops, cast, the binary ops with NumPy
// broadcasting, where and clip_by_value. C++17-clean (plain pointers, DT, the stream) so that both nvcc and
// the registration in elementwise_cuda.cpp include it. Each launcher enqueues one kernel on `stream` and
// returns false, launching nothing, for a dtype its op has no kernel for.
#include <cstdint>

#include "framework/ops/cuda/cuda_dt.h"
#include "framework/ops/cuda/cuda_runtime.h"

namespace ember::cuda {

// One enumerator per unary op of op_list.def (gelu split by its `approximate` attribute).
enum class UnaryOp : uint8_t {
  Neg, Abs, Sign, Square, Relu, Relu6,                                  // float types, int32, int64
  Exp, Log, Log1p, Sqrt, Rsqrt, Reciprocal, Sin, Cos, Tanh, Sigmoid,  // float types only from here
  Elu, Selu, Gelu, GeluApproximate, Softplus, Softsign, Swish, Floor, Ceil, Round,
  IsFinite,    // float types -> bool
  LogicalNot,  // bool -> bool
};

// y[i] = op(x[i]) over n contiguous elements; y has x's dtype (bool for IsFinite).
bool launch_unary(UnaryOp op, DT dt, const void* x, void* y, int64_t n, cudaStream_t stream);
// y[i] = cast(x[i]) from dtype `from` to dtype `to`, with functors::CastTo's conversion rules.
bool launch_cast(DT from, DT to, const void* x, void* y, int64_t n, cudaStream_t stream);

inline constexpr int kMaxBroadcastDims = 8;

// The iteration space of a broadcast (up to three operands) after the host has collapsed it as the CPU does
// (size-1 dimensions dropped, dimensions that every operand steps through contiguously merged). Dimension 0
// is the INNERMOST one. strides[d][k] is operand k's element stride along dimension d (0 where it is
// broadcast). A plan of rank 1 whose strides are all 0 or 1 runs as a flat loop (same-shape operands,
// scalar operands).
struct BroadcastIndex {
  int rank = 1;
  int64_t dims[kMaxBroadcastDims] = {};
  int64_t strides[kMaxBroadcastDims][3] = {};
};

// One enumerator per binary op of op_list.def.
enum class BinaryOp : uint8_t {
  Add, Sub, Mul, Div, FloorDiv, Mod, Maximum, Minimum,           // numeric types
  Pow, SquaredDifference, ReluGrad,                             // float types, int32, int64
  DivNoNan,                                                     // float types
  Equal, NotEqual,                                              // every dtype -> bool
  Less, LessEqual, Greater, GreaterEqual,                       // numeric types -> bool
  LogicalAnd, LogicalOr,                                        // bool -> bool
};

// z = op(a, b) over the n elements of the output, a and b read through `index` (operands 0 and 1).
bool launch_binary(BinaryOp op, DT dt, const void* a, const void* b, void* z, int64_t n, const BroadcastIndex& index,
                   cudaStream_t stream);
// z = cond ? a : b, copying elements of `element_size` bytes (1, 2, 4 or 8); operands 0, 1, 2 of `index`.
bool launch_where(int element_size, const void* cond, const void* a, const void* b, void* z, int64_t n,
                  const BroadcastIndex& index, cudaStream_t stream);
// z = maximum(minimum(x, hi), lo) for numeric dt; operands 0, 1, 2 of `index` are x, lo, hi.
bool launch_clip_by_value(DT dt, const void* x, const void* lo, const void* hi, void* z, int64_t n,
                          const BroadcastIndex& index, cudaStream_t stream);

}  // namespace ember::cuda
