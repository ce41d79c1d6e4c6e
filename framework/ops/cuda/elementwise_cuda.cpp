// CUDA registration of the elementwise ops (kernels in elementwise.cu): unary ops, cast, binary ops with NumPy
// broadcasting, where and clip_by_value, over the dtypes of their CPU registrations. The broadcast is planned
// here on the host, with the plan the CPU kernels use (BroadcastPlan), and handed to the kernels as a fixed-size
// BroadcastIndex.
#include <array>

#include "framework/core/error.h"
#include "framework/ops/broadcast.h"
#include "framework/ops/cuda/elementwise_launch.h"
#include "framework/ops/cuda/kernel_util.h"
#include "framework/ops/dispatch.h"

namespace ember {
namespace {

// The CPU's collapsed broadcast plan of `in` against `out`, innermost dimension first, as the kernels read it.
template <size_t N>
cuda::BroadcastIndex elementwise_broadcast_index(OpId op, const Shape& out, const std::array<const Shape*, N>& in) {
  static_assert(N <= 3, "BroadcastIndex holds at most three operands");
  BroadcastPlan<N> plan(out, in);
  const int64_t rank = plan.rank();
  EMBER_CHECK(rank <= cuda::kMaxBroadcastDims, Unimplemented)
      << op << ": broadcasting shapes that stay of rank " << rank << " after merging dimensions is not "
      << "implemented on CUDA (at most " << cuda::kMaxBroadcastDims << "; output shape " << out << ")";
  cuda::BroadcastIndex index;
  index.rank = static_cast<int>(rank);
  for (int64_t d = 0; d < rank; ++d) {
    const size_t from = static_cast<size_t>(rank - 1 - d);
    index.dims[d] = plan.dims[from];
    for (size_t k = 0; k < N; ++k) index.strides[d][k] = plan.strides[from][k];
  }
  return index;
}

void elementwise_unimplemented(const KernelContext& ctx, DType dtype) {
  throw make_error<Unimplemented>(ctx.op, ": dtype ", dtype, " is not implemented on CUDA");
}

void elementwise_unary_cuda(const KernelContext& ctx, cuda::UnaryOp op) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const int64_t n = x.num_elements();
  if (n == 0) return;
  const int dev = cuda::device_of(ctx);
  if (!cuda::launch_unary(op, cuda::to_dt(x.dtype()), x.raw_data(), y.raw_data(), n, cuda::stream(dev)))
    elementwise_unimplemented(ctx, x.dtype());
  cuda::after_launch(op_name(ctx.op), dev);
}

// Integer division by zero and integers to negative powers are errors on the CPU, which reads the divisor on
// the host before its loop. On CUDA the divisor is on the device and no kernel function synchronises, so they
// are not detected: an integer x / 0 (div, floordiv, mod) gives 0 and an integer x ** -k gives 1.
void elementwise_binary_cuda(const KernelContext& ctx, cuda::BinaryOp op) {
  const Tensor &a = ctx.inputs[0], &b = ctx.inputs[1];
  Tensor& z = ctx.outputs[0];
  const int64_t n = z.num_elements();
  if (n == 0) return;
  const cuda::BroadcastIndex index = elementwise_broadcast_index<2>(ctx.op, z.shape(), {&a.shape(), &b.shape()});
  const int dev = cuda::device_of(ctx);
  if (!cuda::launch_binary(op, cuda::to_dt(a.dtype()), a.raw_data(), b.raw_data(), z.raw_data(), n, index,
                           cuda::stream(dev)))
    elementwise_unimplemented(ctx, a.dtype());
  cuda::after_launch(op_name(ctx.op), dev);
}

#define EMBER_CUDA_UNARY_KERNEL(name, Op, DTYPES)                                                  \
  void name##_cuda(const KernelContext& ctx) { elementwise_unary_cuda(ctx, cuda::UnaryOp::Op); } \
  EMBER_REGISTER_KERNEL(name, CUDA, name##_cuda, DTYPES)

EMBER_CUDA_UNARY_KERNEL(neg, Neg, EMBER_SIGNED_DTYPES);
EMBER_CUDA_UNARY_KERNEL(abs, Abs, EMBER_SIGNED_DTYPES);
EMBER_CUDA_UNARY_KERNEL(sign, Sign, EMBER_SIGNED_DTYPES);
EMBER_CUDA_UNARY_KERNEL(square, Square, EMBER_SIGNED_DTYPES);
EMBER_CUDA_UNARY_KERNEL(relu, Relu, EMBER_SIGNED_DTYPES);
EMBER_CUDA_UNARY_KERNEL(relu6, Relu6, EMBER_SIGNED_DTYPES);
EMBER_CUDA_UNARY_KERNEL(exp, Exp, EMBER_FLOAT_DTYPES);
EMBER_CUDA_UNARY_KERNEL(log, Log, EMBER_FLOAT_DTYPES);
EMBER_CUDA_UNARY_KERNEL(log1p, Log1p, EMBER_FLOAT_DTYPES);
EMBER_CUDA_UNARY_KERNEL(sqrt, Sqrt, EMBER_FLOAT_DTYPES);
EMBER_CUDA_UNARY_KERNEL(rsqrt, Rsqrt, EMBER_FLOAT_DTYPES);
EMBER_CUDA_UNARY_KERNEL(reciprocal, Reciprocal, EMBER_FLOAT_DTYPES);
EMBER_CUDA_UNARY_KERNEL(sin, Sin, EMBER_FLOAT_DTYPES);
EMBER_CUDA_UNARY_KERNEL(cos, Cos, EMBER_FLOAT_DTYPES);
EMBER_CUDA_UNARY_KERNEL(tanh, Tanh, EMBER_FLOAT_DTYPES);
EMBER_CUDA_UNARY_KERNEL(sigmoid, Sigmoid, EMBER_FLOAT_DTYPES);
EMBER_CUDA_UNARY_KERNEL(elu, Elu, EMBER_FLOAT_DTYPES);
EMBER_CUDA_UNARY_KERNEL(selu, Selu, EMBER_FLOAT_DTYPES);
EMBER_CUDA_UNARY_KERNEL(softplus, Softplus, EMBER_FLOAT_DTYPES);
EMBER_CUDA_UNARY_KERNEL(softsign, Softsign, EMBER_FLOAT_DTYPES);
EMBER_CUDA_UNARY_KERNEL(swish, Swish, EMBER_FLOAT_DTYPES);
EMBER_CUDA_UNARY_KERNEL(floor, Floor, EMBER_FLOAT_DTYPES);
EMBER_CUDA_UNARY_KERNEL(ceil, Ceil, EMBER_FLOAT_DTYPES);
EMBER_CUDA_UNARY_KERNEL(round, Round, EMBER_FLOAT_DTYPES);
EMBER_CUDA_UNARY_KERNEL(is_finite, IsFinite, EMBER_FLOAT_DTYPES);
EMBER_CUDA_UNARY_KERNEL(logical_not, LogicalNot, ::ember::DType::Bool);
#undef EMBER_CUDA_UNARY_KERNEL

void gelu_cuda(const KernelContext& ctx) {
  const bool approximate = std::get<GeluAttrs>(ctx.attrs).approximate;
  elementwise_unary_cuda(ctx, approximate ? cuda::UnaryOp::GeluApproximate : cuda::UnaryOp::Gelu);
}
EMBER_REGISTER_KERNEL(gelu, CUDA, gelu_cuda, EMBER_FLOAT_DTYPES);

void cast_cuda(const KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const int64_t n = x.num_elements();
  if (n == 0) return;
  const int dev = cuda::device_of(ctx);
  if (!cuda::launch_cast(cuda::to_dt(x.dtype()), cuda::to_dt(y.dtype()), x.raw_data(), y.raw_data(), n,
                         cuda::stream(dev)))
    elementwise_unimplemented(ctx, x.dtype());
  cuda::after_launch("cast", dev);
}
EMBER_REGISTER_KERNEL(cast, CUDA, cast_cuda, EMBER_ALL_DTYPES);

#define EMBER_CUDA_BINARY_KERNEL(name, Op, DTYPES)                                                   \
  void name##_cuda(const KernelContext& ctx) { elementwise_binary_cuda(ctx, cuda::BinaryOp::Op); } \
  EMBER_REGISTER_KERNEL(name, CUDA, name##_cuda, DTYPES)

EMBER_CUDA_BINARY_KERNEL(add, Add, EMBER_NUMERIC_DTYPES);
EMBER_CUDA_BINARY_KERNEL(sub, Sub, EMBER_NUMERIC_DTYPES);
EMBER_CUDA_BINARY_KERNEL(mul, Mul, EMBER_NUMERIC_DTYPES);
EMBER_CUDA_BINARY_KERNEL(div, Div, EMBER_NUMERIC_DTYPES);
EMBER_CUDA_BINARY_KERNEL(div_no_nan, DivNoNan, EMBER_FLOAT_DTYPES);
EMBER_CUDA_BINARY_KERNEL(floordiv, FloorDiv, EMBER_NUMERIC_DTYPES);
EMBER_CUDA_BINARY_KERNEL(mod, Mod, EMBER_NUMERIC_DTYPES);
EMBER_CUDA_BINARY_KERNEL(maximum, Maximum, EMBER_NUMERIC_DTYPES);
EMBER_CUDA_BINARY_KERNEL(minimum, Minimum, EMBER_NUMERIC_DTYPES);
EMBER_CUDA_BINARY_KERNEL(pow, Pow, EMBER_SIGNED_DTYPES);
EMBER_CUDA_BINARY_KERNEL(squared_difference, SquaredDifference, EMBER_SIGNED_DTYPES);
EMBER_CUDA_BINARY_KERNEL(relu_grad, ReluGrad, EMBER_SIGNED_DTYPES);
EMBER_CUDA_BINARY_KERNEL(equal, Equal, EMBER_ALL_DTYPES);
EMBER_CUDA_BINARY_KERNEL(not_equal, NotEqual, EMBER_ALL_DTYPES);
EMBER_CUDA_BINARY_KERNEL(less, Less, EMBER_NUMERIC_DTYPES);
EMBER_CUDA_BINARY_KERNEL(less_equal, LessEqual, EMBER_NUMERIC_DTYPES);
EMBER_CUDA_BINARY_KERNEL(greater, Greater, EMBER_NUMERIC_DTYPES);
EMBER_CUDA_BINARY_KERNEL(greater_equal, GreaterEqual, EMBER_NUMERIC_DTYPES);
EMBER_CUDA_BINARY_KERNEL(logical_and, LogicalAnd, ::ember::DType::Bool);
EMBER_CUDA_BINARY_KERNEL(logical_or, LogicalOr, ::ember::DType::Bool);
#undef EMBER_CUDA_BINARY_KERNEL

// The dispatcher keys on cond (always bool); the kernel copies elements of any dtype by size, as the CPU's.
void where_cuda(const KernelContext& ctx) {
  const Tensor &cond = ctx.inputs[0], &a = ctx.inputs[1], &b = ctx.inputs[2];
  Tensor& z = ctx.outputs[0];
  const int64_t n = z.num_elements();
  if (n == 0) return;
  const cuda::BroadcastIndex index =
      elementwise_broadcast_index<3>(ctx.op, z.shape(), {&cond.shape(), &a.shape(), &b.shape()});
  const int dev = cuda::device_of(ctx);
  if (!cuda::launch_where(static_cast<int>(dtype_size(a.dtype())), cond.raw_data(), a.raw_data(), b.raw_data(),
                          z.raw_data(), n, index, cuda::stream(dev)))
    elementwise_unimplemented(ctx, a.dtype());
  cuda::after_launch("where", dev);
}
EMBER_REGISTER_KERNEL(where, CUDA, where_cuda, EMBER_ALL_DTYPES);

void clip_by_value_cuda(const KernelContext& ctx) {
  const Tensor &x = ctx.inputs[0], &lo = ctx.inputs[1], &hi = ctx.inputs[2];
  Tensor& z = ctx.outputs[0];
  const int64_t n = z.num_elements();
  if (n == 0) return;
  const cuda::BroadcastIndex index =
      elementwise_broadcast_index<3>(ctx.op, z.shape(), {&x.shape(), &lo.shape(), &hi.shape()});
  const int dev = cuda::device_of(ctx);
  if (!cuda::launch_clip_by_value(cuda::to_dt(x.dtype()), x.raw_data(), lo.raw_data(), hi.raw_data(), z.raw_data(),
                                  n, index, cuda::stream(dev)))
    elementwise_unimplemented(ctx, x.dtype());
  cuda::after_launch("clip_by_value", dev);
}
EMBER_REGISTER_KERNEL(clip_by_value, CUDA, clip_by_value_cuda, EMBER_NUMERIC_DTYPES);

}  // namespace
}  // namespace ember
