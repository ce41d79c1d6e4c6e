// Front end of matmul and matmul_bias: validation and shape inference (shared by every backend).
#include "framework/ops/linalg.h"

#include "framework/ops/broadcast.h"
#include "framework/ops/dispatch.h"

namespace ember::ops {

namespace {

bool matmul_dtype(DType t) {
  switch (t) {
    case DType::Float32:
    case DType::Float64:
    case DType::Float16:
    case DType::BFloat16:
    case DType::Int32:
    case DType::Int64: return true;
    default: return false;
  }
}

const char* flag(bool b) { return b ? "true" : "false"; }

// The shape of op(a) @ op(b), after checking the operands as `op` (matmul or matmul_bias).
Shape product_shape(const char* op, const Tensor& a, const Tensor& b, const MatMulOptions& options) {
  EMBER_CHECK(a.defined() && b.defined(), InvalidArgument) << op << ": an input tensor is undefined";
  EMBER_CHECK(a.rank() >= 2 && b.rank() >= 2, InvalidArgument)
      << op << ": expected operands of rank >= 2, got a with shape " << a.shape() << " and b with shape "
      << b.shape();
  EMBER_CHECK(a.dtype() == b.dtype(), InvalidArgument)
      << op << ": a and b must have the same dtype, got " << a.dtype() << " and " << b.dtype();
  EMBER_CHECK(matmul_dtype(a.dtype()), InvalidArgument)
      << op << ": dtype " << a.dtype() << " is not supported (expected float32, float64, float16, bfloat16, int32 or int64)";
  const Shape &sa = a.shape(), &sb = b.shape();
  const int64_t ra = sa.rank(), rb = sb.rank();
  const int64_t m = options.transpose_a ? sa[ra - 1] : sa[ra - 2];
  const int64_t ka = options.transpose_a ? sa[ra - 2] : sa[ra - 1];
  const int64_t kb = options.transpose_b ? sb[rb - 1] : sb[rb - 2];
  const int64_t n = options.transpose_b ? sb[rb - 2] : sb[rb - 1];
  EMBER_CHECK(ka == kb, InvalidArgument) << op << ": inner dimensions do not agree: a has shape " << sa
                                         << " (transpose_a=" << flag(options.transpose_a) << ") and b has shape " << sb
                                         << " (transpose_b=" << flag(options.transpose_b) << "), so " << ka
                                         << " columns of a meet " << kb << " rows of b";
  const Shape batch_a(sa.begin(), sa.end() - 2), batch_b(sb.begin(), sb.end() - 2);
  Shape out;
  try {
    out = broadcast_shapes(op, batch_a, batch_b);
  } catch (const InvalidArgument&) {
    throw make_error<InvalidArgument>(op, ": batch dimensions ", batch_a, " of a (shape ", sa, ") and ", batch_b,
                                      " of b (shape ", sb, ") do not broadcast");
  }
  out.push_back(m);
  out.push_back(n);
  return out;
}

Tensor matmul_bias_op(const char* op, FusedActivation activation, const Tensor& a, const Tensor& b, const Tensor& bias,
                      const MatMulOptions& options) {
  const Shape out = product_shape(op, a, b, options);
  EMBER_CHECK(bias.defined(), InvalidArgument) << op << ": the bias is an undefined tensor";
  EMBER_CHECK(is_floating(a.dtype()), InvalidArgument)
      << op << ": dtype " << a.dtype() << " is not supported (expected float32, float64, float16 or bfloat16)";
  EMBER_CHECK(bias.dtype() == a.dtype(), InvalidArgument)
      << op << ": the bias must have the operands' dtype " << a.dtype() << ", got " << bias.dtype();
  EMBER_CHECK(bias.rank() == 1 && bias.shape()[0] == out[out.rank() - 1], InvalidArgument)
      << op << ": bias must have shape [" << out[out.rank() - 1] << "], one value per column of the product of shape "
      << out << ", got " << bias.shape();
  const Tensor inputs[] = {a, b, bias};
  return run_op(OpId::matmul_bias, inputs, OutputSpec{out, a.dtype()},
                MatMulAttrs{
                    .transpose_a = options.transpose_a, .transpose_b = options.transpose_b, .activation = activation});
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, MatMulOptions options) {
  const Shape out = product_shape("matmul", a, b, options);
  const Tensor inputs[] = {a, b};
  return run_op(OpId::matmul, inputs, OutputSpec{out, a.dtype()},
                MatMulAttrs{.transpose_a = options.transpose_a, .transpose_b = options.transpose_b});
}

Tensor matmul_bias(const Tensor& a, const Tensor& b, const Tensor& bias, MatMulOptions options) {
  return matmul_bias_op("matmul_bias", FusedActivation::None, a, b, bias, options);
}

Tensor matmul_bias_relu(const Tensor& a, const Tensor& b, const Tensor& bias, MatMulOptions options) {
  return matmul_bias_op("matmul_bias_relu", FusedActivation::Relu, a, b, bias, options);
}

}  // namespace ember::ops
