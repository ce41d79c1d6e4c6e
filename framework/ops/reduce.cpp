// Front ends of the reductions (validation, axis normalisation, shape inference) and the composite
// reductions built from other ops: reduce_logsumexp, reduce_variance, reduce_std.
#include "framework/ops/reduce.h"

#include "framework/ops/array.h"
#include "framework/ops/creation.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/elementwise.h"

namespace ember::ops {

namespace {

enum class Accepts { Numeric, Bool, Floating };

void check_input(const char* op, const Tensor& x, Accepts accepts) {
  EMBER_CHECK(x.defined(), InvalidArgument) << op << ": the input tensor is undefined";
  const DType t = x.dtype();
  switch (accepts) {
    case Accepts::Numeric:
      EMBER_CHECK(t != DType::Bool, InvalidArgument)
          << op << ": dtype " << t << " is not supported (expected a numeric dtype; use reduce_all/reduce_any for bool)";
      break;
    case Accepts::Bool:
      EMBER_CHECK(t == DType::Bool, InvalidArgument) << op << ": dtype " << t << " is not supported (expected bool)";
      break;
    case Accepts::Floating:
      EMBER_CHECK(is_floating(t), InvalidArgument)
          << op << ": dtype " << t << " is not supported (expected a floating dtype)";
      break;
  }
}

struct Plan {
  ReduceAttrs attrs;
  Shape out_shape;
  int64_t count = 1;  // elements reduced into each output
};

// Normalises the axes (sorted, unique, non-negative) and infers the output shape.
Plan plan_reduction(const char* op, const Tensor& x, const Axes& axis, bool keepdims) {
  const int64_t rank = x.rank();
  std::vector<bool> reduced(static_cast<size_t>(rank), !axis.axes.has_value());
  if (axis.axes) {
    for (int64_t a : *axis.axes) {
      EMBER_CHECK(a >= -rank && a < rank, InvalidArgument)
          << op << ": axis " << a << " is out of range for a tensor of rank " << rank << " and shape " << x.shape()
          << " (expected " << -rank << " <= axis < " << rank << ")";
      const int64_t n = a < 0 ? a + rank : a;
      EMBER_CHECK(!reduced[static_cast<size_t>(n)], InvalidArgument)
          << op << ": axis " << a << " names dimension " << n << " of the rank-" << rank
          << " input more than once (each axis may be listed once)";
      reduced[static_cast<size_t>(n)] = true;
    }
  }
  Plan p;
  p.attrs.keepdims = keepdims;
  for (int64_t d = 0; d < rank; ++d) {
    if (reduced[static_cast<size_t>(d)]) {
      p.attrs.axes.push_back(d);
      p.count *= x.shape()[d];
      if (keepdims) p.out_shape.push_back(1);
    } else {
      p.out_shape.push_back(x.shape()[d]);
    }
  }
  return p;
}

Tensor reduce(OpId op, const Tensor& x, const Axes& axis, bool keepdims, Accepts accepts) {
  const char* name = op_name(op);
  check_input(name, x, accepts);
  Plan p = plan_reduction(name, x, axis, keepdims);
  const Tensor inputs[] = {x};
  return run_op(op, inputs, OutputSpec{p.out_shape, x.dtype()}, std::move(p.attrs));
}

Tensor arg_reduce(OpId op, const Tensor& x, int64_t axis, DType output_type) {
  const char* name = op_name(op);
  check_input(name, x, Accepts::Numeric);
  EMBER_CHECK(output_type == DType::Int32 || output_type == DType::Int64, InvalidArgument)
      << name << ": output_type " << output_type << " is not supported (expected int32 or int64)";
  const int64_t a = normalize_axis(axis, x.rank(), name);
  EMBER_CHECK(x.shape()[a] > 0, InvalidArgument)
      << name << ": reduction axis " << axis << " is empty in shape " << x.shape() << " (no index to return)";
  Shape out;
  for (int64_t d = 0; d < x.rank(); ++d)
    if (d != a) out.push_back(x.shape()[d]);
  const Tensor inputs[] = {x};
  return run_op(op, inputs, OutputSpec{out, output_type}, ArgReduceAttrs{a, output_type});
}

}  // namespace

Tensor reduce_sum(const Tensor& x, Axes axis, bool keepdims) {
  return reduce(OpId::reduce_sum, x, axis, keepdims, Accepts::Numeric);
}

Tensor reduce_mean(const Tensor& x, Axes axis, bool keepdims) {
  check_input("reduce_mean", x, Accepts::Numeric);
  if (!is_floating(x.dtype())) {
    Plan p = plan_reduction("reduce_mean", x, axis, keepdims);
    EMBER_CHECK(p.count > 0 || p.out_shape.num_elements() == 0, InvalidArgument)
        << "reduce_mean: cannot average zero elements of dtype " << x.dtype() << " (input shape " << x.shape()
        << "; an integer mean of an empty set has no value)";
  }
  return reduce(OpId::reduce_mean, x, axis, keepdims, Accepts::Numeric);
}

Tensor reduce_max(const Tensor& x, Axes axis, bool keepdims) {
  return reduce(OpId::reduce_max, x, axis, keepdims, Accepts::Numeric);
}

Tensor reduce_min(const Tensor& x, Axes axis, bool keepdims) {
  return reduce(OpId::reduce_min, x, axis, keepdims, Accepts::Numeric);
}

Tensor reduce_prod(const Tensor& x, Axes axis, bool keepdims) {
  return reduce(OpId::reduce_prod, x, axis, keepdims, Accepts::Numeric);
}

Tensor reduce_all(const Tensor& x, Axes axis, bool keepdims) {
  return reduce(OpId::reduce_all, x, axis, keepdims, Accepts::Bool);
}

Tensor reduce_any(const Tensor& x, Axes axis, bool keepdims) {
  return reduce(OpId::reduce_any, x, axis, keepdims, Accepts::Bool);
}

Tensor reduce_logsumexp(const Tensor& x, Axes axis, bool keepdims) {
  check_input("reduce_logsumexp", x, Accepts::Floating);
  plan_reduction("reduce_logsumexp", x, axis, keepdims);
  // Shift by the max for stability; an infinite max (all -inf, or +inf) shifts by 0 instead so that
  // -inf - -inf does not make NaN (TF does the same).
  Tensor raw_max = reduce_max(x, axis, true);
  Tensor shift = where(is_finite(raw_max), raw_max, zeros_like(raw_max));
  Tensor result = log(reduce_sum(exp(sub(x, shift)), axis, keepdims));
  if (!keepdims) shift = reshape(shift, result.shape());
  return add(result, shift);
}

Tensor reduce_variance(const Tensor& x, Axes axis, bool keepdims) {
  check_input("reduce_variance", x, Accepts::Floating);
  plan_reduction("reduce_variance", x, axis, keepdims);
  Tensor means = reduce_mean(x, axis, true);
  return reduce_mean(square(sub(x, means)), axis, keepdims);
}

Tensor reduce_std(const Tensor& x, Axes axis, bool keepdims) {
  check_input("reduce_std", x, Accepts::Floating);
  plan_reduction("reduce_std", x, axis, keepdims);
  return sqrt(reduce_variance(x, axis, keepdims));
}

Tensor argmax(const Tensor& x, int64_t axis, DType output_type) {
  return arg_reduce(OpId::argmax, x, axis, output_type);
}

Tensor argmin(const Tensor& x, int64_t axis, DType output_type) {
  return arg_reduce(OpId::argmin, x, axis, output_type);
}

}  // namespace ember::ops
