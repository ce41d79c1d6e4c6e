// CPU kernels of the binary elementwise ops (NumPy broadcasting), where and clip_by_value.
#include <type_traits>

#include "framework/ops/cpu/array_copy.h"
#include "framework/ops/cpu/elementwise_loops.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/functors.h"

namespace ember {
namespace {

template <class T, class Out, class F>
void run_binary(const KernelContext& ctx, F f) {
  cpu::binary_loop<T, Out>(ctx.inputs[0], ctx.inputs[1], ctx.outputs[0], cpu::Binary<T, Out, F>{f});
}

// Integer division by zero has no value to return: reject it before the (non-throwing) parallel loop.
// Every element of b reaches some output unless the output is empty.
template <class T>
void check_integer_divisor(const KernelContext& ctx, const char* op) {
  if constexpr (std::is_integral_v<T>) {
    if (ctx.outputs[0].num_elements() == 0) return;
    const Tensor& b = ctx.inputs[1];
    const T* p = static_cast<const T*>(b.raw_data());
    for (int64_t i = 0, n = b.num_elements(); i < n; ++i)
      EMBER_CHECK(p[i] != T(0), InvalidArgument) << op << ": integer division by zero";
  }
}

#define EMBER_BINARY_KERNEL(name, Functor, DISPATCH, DTYPES, Out)                                    \
  void name##_cpu(const KernelContext& ctx) {                                                      \
    DISPATCH(ctx.inputs[0].dtype(), #name, run_binary<scalar_t, Out>(ctx, functors::Functor{}));   \
  }                                                                                                \
  EMBER_REGISTER_KERNEL(name, CPU, name##_cpu, DTYPES)

EMBER_BINARY_KERNEL(add, Add, EMBER_DISPATCH_NUMERIC, EMBER_NUMERIC_DTYPES, scalar_t);
EMBER_BINARY_KERNEL(sub, Sub, EMBER_DISPATCH_NUMERIC, EMBER_NUMERIC_DTYPES, scalar_t);
EMBER_BINARY_KERNEL(mul, Mul, EMBER_DISPATCH_NUMERIC, EMBER_NUMERIC_DTYPES, scalar_t);
EMBER_BINARY_KERNEL(maximum, Maximum, EMBER_DISPATCH_NUMERIC, EMBER_NUMERIC_DTYPES, scalar_t);
EMBER_BINARY_KERNEL(minimum, Minimum, EMBER_DISPATCH_NUMERIC, EMBER_NUMERIC_DTYPES, scalar_t);
EMBER_BINARY_KERNEL(div_no_nan, DivNoNan, EMBER_DISPATCH_FLOAT, EMBER_FLOAT_DTYPES, scalar_t);
EMBER_BINARY_KERNEL(squared_difference, SquaredDifference, EMBER_DISPATCH_SIGNED, EMBER_SIGNED_DTYPES, scalar_t);
EMBER_BINARY_KERNEL(relu_grad, ReluGrad, EMBER_DISPATCH_SIGNED, EMBER_SIGNED_DTYPES, scalar_t);
EMBER_BINARY_KERNEL(equal, Equal, EMBER_DISPATCH_ALL, EMBER_ALL_DTYPES, bool);
EMBER_BINARY_KERNEL(not_equal, NotEqual, EMBER_DISPATCH_ALL, EMBER_ALL_DTYPES, bool);
EMBER_BINARY_KERNEL(less, Less, EMBER_DISPATCH_NUMERIC, EMBER_NUMERIC_DTYPES, bool);
EMBER_BINARY_KERNEL(less_equal, LessEqual, EMBER_DISPATCH_NUMERIC, EMBER_NUMERIC_DTYPES, bool);
EMBER_BINARY_KERNEL(greater, Greater, EMBER_DISPATCH_NUMERIC, EMBER_NUMERIC_DTYPES, bool);
EMBER_BINARY_KERNEL(greater_equal, GreaterEqual, EMBER_DISPATCH_NUMERIC, EMBER_NUMERIC_DTYPES, bool);
#undef EMBER_BINARY_KERNEL

// div, floordiv and mod: integer divisors are checked for zero first.
#define EMBER_DIVISION_KERNEL(name, Functor)                                 \
  void name##_cpu(const KernelContext& ctx) {                              \
    EMBER_DISPATCH_NUMERIC(ctx.inputs[0].dtype(), #name, {                 \
      check_integer_divisor<scalar_t>(ctx, #name);                         \
      run_binary<scalar_t, scalar_t>(ctx, functors::Functor{});            \
    });                                                                    \
  }                                                                        \
  EMBER_REGISTER_KERNEL(name, CPU, name##_cpu, EMBER_NUMERIC_DTYPES)

EMBER_DIVISION_KERNEL(div, Div);
EMBER_DIVISION_KERNEL(floordiv, FloorDiv);
EMBER_DIVISION_KERNEL(mod, Mod);
#undef EMBER_DIVISION_KERNEL

void pow_cpu(const KernelContext& ctx) {
  EMBER_DISPATCH_SIGNED(ctx.inputs[0].dtype(), "pow", {
    if constexpr (std::is_integral_v<scalar_t>) {
      // TF rejects these too: the result is not an integer (and 0 to a negative power has none).
      if (ctx.outputs[0].num_elements() > 0) {
        const Tensor& b = ctx.inputs[1];
        const scalar_t* p = static_cast<const scalar_t*>(b.raw_data());
        for (int64_t i = 0, n = b.num_elements(); i < n; ++i)
          EMBER_CHECK(p[i] >= 0, InvalidArgument)
              << "pow: integers to negative integer powers are not allowed (got exponent " << p[i] << ")";
      }
    }
    run_binary<scalar_t, scalar_t>(ctx, functors::Pow{});
  });
}
EMBER_REGISTER_KERNEL(pow, CPU, pow_cpu, EMBER_SIGNED_DTYPES);

void logical_and_cpu(const KernelContext& ctx) { run_binary<bool, bool>(ctx, functors::LogicalAnd{}); }
EMBER_REGISTER_KERNEL(logical_and, CPU, logical_and_cpu, ::ember::DType::Bool);
void logical_or_cpu(const KernelContext& ctx) { run_binary<bool, bool>(ctx, functors::LogicalOr{}); }
EMBER_REGISTER_KERNEL(logical_or, CPU, logical_or_cpu, ::ember::DType::Bool);

// where selects storage values, so it runs on unsigned integers of the element's width: the same bits, one
// instantiation per size, and loops that vectorise for the 2-byte half types too. The dispatcher keys on the
// first input (cond, always bool); the kernel itself serves every dtype of a and b.

// z[i] = c[i] ? a : b over [s, e), a and b full or scalars. The condition is read as bytes (0 or 1) and selects
// through a bit mask rather than a branch, so the loop vectorises.
template <class E>
void where_range(const uint8_t* __restrict c, const E* __restrict a, bool a_full, const E* __restrict b, bool b_full,
                 E* __restrict z, int64_t s, int64_t e) {
  const E a0 = a[0], b0 = b[0];
  for (int64_t i = s; i < e; ++i) {
    const E mask = static_cast<E>(E(0) - static_cast<E>(c[i]));
    const E x = a_full ? a[i] : a0, y = b_full ? b[i] : b0;
    z[i] = static_cast<E>((x & mask) | (y & static_cast<E>(~mask)));
  }
}

void where_cpu(const KernelContext& ctx) {
  const Tensor &cond = ctx.inputs[0], &a = ctx.inputs[1], &b = ctx.inputs[2];
  Tensor& out = ctx.outputs[0];
  const int64_t n = out.num_elements(), na = a.num_elements(), nb = b.num_elements();
  cpu::by_size(dtype_size(a.dtype()), [&](auto tag) {
    using E = decltype(tag);
    // A full condition with full or scalar operands (a gradient mask against a scalar zero) is one flat parallel
    // loop; the general broadcast plan would make a scalar operand one row on one thread.
    if (n > 0 && cond.num_elements() == n && (na == n || na == 1) && (nb == n || nb == 1)) {
      const uint8_t* c = static_cast<const uint8_t*>(cond.raw_data());
      const E* x = static_cast<const E*>(a.raw_data());
      const E* y = static_cast<const E*>(b.raw_data());
      E* z = static_cast<E*>(out.raw_data());
      const bool a_full = na == n, b_full = nb == n;
      cpu::run_range(n, kParallelGrain,
                     [=](int64_t s, int64_t e) { where_range<E>(c, x, a_full, y, b_full, z, s, e); });
    } else {
      cpu::ternary_loop<bool, E, E, E>(cond, a, b, out, functors::Where{});
    }
  });
}
EMBER_REGISTER_KERNEL(where, CPU, where_cpu, EMBER_ALL_DTYPES);

template <class T>
struct ClipElement {
  T operator()(T x, T lo, T hi) const {
    using C = compute_t<T>;
    return static_cast<T>(functors::ClipByValue{}(static_cast<C>(x), static_cast<C>(lo), static_cast<C>(hi)));
  }
};

void clip_by_value_cpu(const KernelContext& ctx) {
  EMBER_DISPATCH_NUMERIC(ctx.inputs[0].dtype(), "clip_by_value", {
    cpu::ternary_loop<scalar_t, scalar_t, scalar_t, scalar_t>(ctx.inputs[0], ctx.inputs[1], ctx.inputs[2],
                                                               ctx.outputs[0], ClipElement<scalar_t>{});
  });
}
EMBER_REGISTER_KERNEL(clip_by_value, CPU, clip_by_value_cpu, EMBER_NUMERIC_DTYPES);

}  // namespace
}  // namespace ember
