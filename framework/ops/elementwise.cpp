// Front ends of the elementwise ops: dtype and shape validation, shape inference, then run_op.
#include "framework/ops/elementwise.h"

#include <array>

#include "framework/ops/broadcast.h"
#include "framework/ops/dispatch.h"

namespace ember::ops {

namespace {

constexpr uint32_t bit(DType t) { return 1u << static_cast<int>(t); }
constexpr uint32_t kFloat = bit(DType::Float32) | bit(DType::Float64) | bit(DType::Float16) | bit(DType::BFloat16);
constexpr uint32_t kSigned = kFloat | bit(DType::Int32) | bit(DType::Int64);
constexpr uint32_t kNumeric = kSigned | bit(DType::UInt8);
constexpr uint32_t kAll = kNumeric | bit(DType::Bool);
constexpr uint32_t kBool = bit(DType::Bool);

const char* describe(uint32_t set) {
  switch (set) {
    case kFloat: return "a floating dtype: float32, float64, float16 or bfloat16";
    case kSigned: return "float32, float64, float16, bfloat16, int32 or int64";
    case kNumeric: return "a numeric dtype: float32, float64, float16, bfloat16, int32, int64 or uint8";
    case kBool: return "bool";
    default: return "any dtype";
  }
}

void check_dtype(OpId op, DType t, uint32_t allowed) {
  EMBER_CHECK(allowed & bit(t), InvalidArgument)
      << op << ": dtype " << t << " is not supported (expected " << describe(allowed) << ")";
}

void check_same_dtype(OpId op, DType a, DType b) {
  EMBER_CHECK(a == b, InvalidArgument) << op << ": dtypes " << a << " and " << b
                                       << " differ (TF requires both inputs of an op to share a dtype; use ops::cast)";
}

Tensor unary(OpId op, const Tensor& x, uint32_t allowed, Attrs attrs = {}) {
  check_dtype(op, x.dtype(), allowed);
  return run_op(op, std::span<const Tensor>(&x, 1), OutputSpec{x.shape(), x.dtype()}, std::move(attrs));
}

Tensor binary(OpId op, const Tensor& a, const Tensor& b, uint32_t allowed, bool bool_output = false) {
  const DType t = a.dtype();
  check_same_dtype(op, t, b.dtype());
  check_dtype(op, t, allowed);
  OutputSpec spec{broadcast_shapes(op_name(op), a.shape(), b.shape()), bool_output ? DType::Bool : t};
  const std::array<Tensor, 2> inputs{a, b};
  return run_op(op, inputs, spec);
}

// A C++ number in an operator takes the tensor's dtype (TF's rule for Python scalars).
Tensor scalar_like(double v, const Tensor& t) { return Tensor::scalar_of(v, t.dtype(), Device::cpu()); }

}  // namespace

Tensor neg(const Tensor& x) { return unary(OpId::neg, x, kSigned); }
Tensor abs(const Tensor& x) { return unary(OpId::abs, x, kSigned); }
Tensor sign(const Tensor& x) { return unary(OpId::sign, x, kSigned); }
Tensor exp(const Tensor& x) { return unary(OpId::exp, x, kFloat); }
Tensor log(const Tensor& x) { return unary(OpId::log, x, kFloat); }
Tensor log1p(const Tensor& x) { return unary(OpId::log1p, x, kFloat); }
Tensor sqrt(const Tensor& x) { return unary(OpId::sqrt, x, kFloat); }
Tensor rsqrt(const Tensor& x) { return unary(OpId::rsqrt, x, kFloat); }
Tensor square(const Tensor& x) { return unary(OpId::square, x, kSigned); }
Tensor reciprocal(const Tensor& x) { return unary(OpId::reciprocal, x, kFloat); }
Tensor sin(const Tensor& x) { return unary(OpId::sin, x, kFloat); }
Tensor cos(const Tensor& x) { return unary(OpId::cos, x, kFloat); }
Tensor tanh(const Tensor& x) { return unary(OpId::tanh, x, kFloat); }
Tensor sigmoid(const Tensor& x) { return unary(OpId::sigmoid, x, kFloat); }
Tensor relu(const Tensor& x) { return unary(OpId::relu, x, kSigned); }
Tensor relu6(const Tensor& x) { return unary(OpId::relu6, x, kSigned); }
Tensor elu(const Tensor& x) { return unary(OpId::elu, x, kFloat); }
Tensor selu(const Tensor& x) { return unary(OpId::selu, x, kFloat); }
Tensor gelu(const Tensor& x, bool approximate) { return unary(OpId::gelu, x, kFloat, GeluAttrs{approximate}); }
Tensor softplus(const Tensor& x) { return unary(OpId::softplus, x, kFloat); }
Tensor softsign(const Tensor& x) { return unary(OpId::softsign, x, kFloat); }
Tensor swish(const Tensor& x) { return unary(OpId::swish, x, kFloat); }
Tensor silu(const Tensor& x) { return swish(x); }
Tensor floor(const Tensor& x) { return unary(OpId::floor, x, kFloat); }
Tensor ceil(const Tensor& x) { return unary(OpId::ceil, x, kFloat); }
Tensor round(const Tensor& x) { return unary(OpId::round, x, kFloat); }

Tensor is_finite(const Tensor& x) {
  check_dtype(OpId::is_finite, x.dtype(), kFloat);
  return run_op(OpId::is_finite, std::span<const Tensor>(&x, 1), OutputSpec{x.shape(), DType::Bool});
}

Tensor logical_not(const Tensor& x) { return unary(OpId::logical_not, x, kBool); }

Tensor cast(const Tensor& x, DType dtype) {
  if (x.dtype() == dtype) return x;  // as tf.cast: no op, the same tensor
  return run_op(OpId::cast, std::span<const Tensor>(&x, 1), OutputSpec{x.shape(), dtype}, CastAttrs{dtype});
}

Tensor add(const Tensor& a, const Tensor& b) { return binary(OpId::add, a, b, kNumeric); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary(OpId::sub, a, b, kNumeric); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary(OpId::mul, a, b, kNumeric); }
Tensor div(const Tensor& a, const Tensor& b) { return binary(OpId::div, a, b, kNumeric); }
Tensor div_no_nan(const Tensor& a, const Tensor& b) { return binary(OpId::div_no_nan, a, b, kFloat); }
Tensor floordiv(const Tensor& a, const Tensor& b) { return binary(OpId::floordiv, a, b, kNumeric); }
Tensor mod(const Tensor& a, const Tensor& b) { return binary(OpId::mod, a, b, kNumeric); }
Tensor pow(const Tensor& a, const Tensor& b) { return binary(OpId::pow, a, b, kSigned); }
Tensor maximum(const Tensor& a, const Tensor& b) { return binary(OpId::maximum, a, b, kNumeric); }
Tensor minimum(const Tensor& a, const Tensor& b) { return binary(OpId::minimum, a, b, kNumeric); }
Tensor squared_difference(const Tensor& a, const Tensor& b) {
  return binary(OpId::squared_difference, a, b, kSigned);
}
Tensor relu_grad(const Tensor& gradients, const Tensor& features) {
  return binary(OpId::relu_grad, gradients, features, kSigned);
}
Tensor equal(const Tensor& a, const Tensor& b) { return binary(OpId::equal, a, b, kAll, true); }
Tensor not_equal(const Tensor& a, const Tensor& b) { return binary(OpId::not_equal, a, b, kAll, true); }
Tensor less(const Tensor& a, const Tensor& b) { return binary(OpId::less, a, b, kNumeric, true); }
Tensor less_equal(const Tensor& a, const Tensor& b) { return binary(OpId::less_equal, a, b, kNumeric, true); }
Tensor greater(const Tensor& a, const Tensor& b) { return binary(OpId::greater, a, b, kNumeric, true); }
Tensor greater_equal(const Tensor& a, const Tensor& b) { return binary(OpId::greater_equal, a, b, kNumeric, true); }
Tensor logical_and(const Tensor& a, const Tensor& b) { return binary(OpId::logical_and, a, b, kBool, true); }
Tensor logical_or(const Tensor& a, const Tensor& b) { return binary(OpId::logical_or, a, b, kBool, true); }

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  EMBER_CHECK(cond.dtype() == DType::Bool, InvalidArgument)
      << "where: cond must have dtype bool, got " << cond.dtype() << " (compare with ops::not_equal or cast it)";
  check_same_dtype(OpId::where, a.dtype(), b.dtype());
  Shape shape = broadcast_shapes("where", broadcast_shapes("where", cond.shape(), a.shape()), b.shape());
  const std::array<Tensor, 3> inputs{cond, a, b};
  return run_op(OpId::where, inputs, OutputSpec{std::move(shape), a.dtype()});
}

Tensor clip_by_value(const Tensor& x, const Tensor& lo, const Tensor& hi) {
  check_same_dtype(OpId::clip_by_value, x.dtype(), lo.dtype());
  check_same_dtype(OpId::clip_by_value, x.dtype(), hi.dtype());
  check_dtype(OpId::clip_by_value, x.dtype(), kNumeric);
  // As TF: the bounds may broadcast to x, but must not enlarge the result beyond x's shape.
  for (const Tensor* bound : {&lo, &hi}) {
    const char* which = bound == &lo ? "clip_value_min" : "clip_value_max";
    EMBER_CHECK(broadcast_shapes("clip_by_value", x.shape(), bound->shape()) == x.shape(), InvalidArgument)
        << "clip_by_value: " << which << " of shape " << bound->shape() << " does not broadcast to x's shape "
        << x.shape();
  }
  const std::array<Tensor, 3> inputs{x, lo, hi};
  return run_op(OpId::clip_by_value, inputs, OutputSpec{x.shape(), x.dtype()});
}

Tensor clip_by_value(const Tensor& x, double lo, double hi) {
  return clip_by_value(x, scalar_like(lo, x), scalar_like(hi, x));
}

}  // namespace ember::ops

namespace ember {

Tensor operator-(const Tensor& x) { return ops::neg(x); }
Tensor operator+(const Tensor& a, const Tensor& b) { return ops::add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return ops::sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return ops::mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return ops::div(a, b); }
Tensor operator+(const Tensor& a, double b) { return ops::add(a, Tensor::scalar_of(b, a.dtype(), Device::cpu())); }
Tensor operator-(const Tensor& a, double b) { return ops::sub(a, Tensor::scalar_of(b, a.dtype(), Device::cpu())); }
Tensor operator*(const Tensor& a, double b) { return ops::mul(a, Tensor::scalar_of(b, a.dtype(), Device::cpu())); }
Tensor operator/(const Tensor& a, double b) { return ops::div(a, Tensor::scalar_of(b, a.dtype(), Device::cpu())); }
Tensor operator+(double a, const Tensor& b) { return ops::add(Tensor::scalar_of(a, b.dtype(), Device::cpu()), b); }
Tensor operator-(double a, const Tensor& b) { return ops::sub(Tensor::scalar_of(a, b.dtype(), Device::cpu()), b); }
Tensor operator*(double a, const Tensor& b) { return ops::mul(Tensor::scalar_of(a, b.dtype(), Device::cpu()), b); }
Tensor operator/(double a, const Tensor& b) { return ops::div(Tensor::scalar_of(a, b.dtype(), Device::cpu()), b); }

}  // namespace ember
