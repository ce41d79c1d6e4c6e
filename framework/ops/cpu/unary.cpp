// CPU kernels of the unary elementwise ops and cast: flat loops over a shared functor.
#include <cstdint>
#include <type_traits>

#include "framework/ops/cpu/elementwise_loops.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/functors.h"

namespace ember {
namespace {

template <class T, class Out, class F>
void run_unary(const KernelContext& ctx, F f) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  cpu::unary_loop(static_cast<const T*>(x.raw_data()), static_cast<Out*>(y.raw_data()), x.num_elements(),
                  cpu::Unary<T, Out, F>{f});
}

// One kernel per op: NAME_cpu applies functors::FUNCTOR over the dtypes of SET (FLOAT or SIGNED).
#define EMBER_UNARY_KERNEL(name, Functor, SET)                                                         \
  void name##_cpu(const KernelContext& ctx) {                                                        \
    EMBER_DISPATCH_##SET(ctx.inputs[0].dtype(), #name, run_unary<scalar_t, scalar_t>(ctx, functors::Functor{})); \
  }                                                                                                  \
  EMBER_REGISTER_KERNEL(name, CPU, name##_cpu, EMBER_##SET##_DTYPES)

EMBER_UNARY_KERNEL(neg, Neg, SIGNED);
EMBER_UNARY_KERNEL(abs, Abs, SIGNED);
EMBER_UNARY_KERNEL(sign, Sign, SIGNED);
EMBER_UNARY_KERNEL(square, Square, SIGNED);
EMBER_UNARY_KERNEL(relu, Relu, SIGNED);
EMBER_UNARY_KERNEL(relu6, Relu6, SIGNED);
EMBER_UNARY_KERNEL(exp, Exp, FLOAT);
EMBER_UNARY_KERNEL(log, Log, FLOAT);
EMBER_UNARY_KERNEL(log1p, Log1p, FLOAT);
EMBER_UNARY_KERNEL(sqrt, Sqrt, FLOAT);
EMBER_UNARY_KERNEL(rsqrt, Rsqrt, FLOAT);
EMBER_UNARY_KERNEL(reciprocal, Reciprocal, FLOAT);
EMBER_UNARY_KERNEL(sin, Sin, FLOAT);
EMBER_UNARY_KERNEL(cos, Cos, FLOAT);
EMBER_UNARY_KERNEL(tanh, Tanh, FLOAT);
EMBER_UNARY_KERNEL(sigmoid, Sigmoid, FLOAT);
EMBER_UNARY_KERNEL(elu, Elu, FLOAT);
EMBER_UNARY_KERNEL(selu, Selu, FLOAT);
EMBER_UNARY_KERNEL(softplus, Softplus, FLOAT);
EMBER_UNARY_KERNEL(softsign, Softsign, FLOAT);
EMBER_UNARY_KERNEL(swish, Swish, FLOAT);
EMBER_UNARY_KERNEL(floor, Floor, FLOAT);
EMBER_UNARY_KERNEL(ceil, Ceil, FLOAT);
EMBER_UNARY_KERNEL(round, Round, FLOAT);
#undef EMBER_UNARY_KERNEL

void gelu_cpu(const KernelContext& ctx) {
  const bool approximate = std::get<GeluAttrs>(ctx.attrs).approximate;
  EMBER_DISPATCH_FLOAT(ctx.inputs[0].dtype(), "gelu", {
    if (approximate) run_unary<scalar_t, scalar_t>(ctx, functors::GeluTanh{});
    else run_unary<scalar_t, scalar_t>(ctx, functors::GeluExact{});
  });
}
EMBER_REGISTER_KERNEL(gelu, CPU, gelu_cpu, EMBER_FLOAT_DTYPES);

void is_finite_cpu(const KernelContext& ctx) {
  EMBER_DISPATCH_FLOAT(ctx.inputs[0].dtype(), "is_finite", run_unary<scalar_t, bool>(ctx, functors::IsFinite{}));
}
EMBER_REGISTER_KERNEL(is_finite, CPU, is_finite_cpu, EMBER_FLOAT_DTYPES);

void logical_not_cpu(const KernelContext& ctx) { run_unary<bool, bool>(ctx, functors::LogicalNot{}); }
EMBER_REGISTER_KERNEL(logical_not, CPU, logical_not_cpu, ::ember::DType::Bool);

template <class From>
void cast_from(const KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const From* src = static_cast<const From*>(x.raw_data());
  // Float32 to and from the half types (mixed precision's casts of every weight and activation): the buffer
  // conversions, whole vectors at a time over the pool, with static_cast's values.
  if constexpr (std::is_same_v<From, float>) {
    if (y.dtype() == DType::Float16) return cpu::narrow(src, y.data<half>(), x.num_elements());
    if (y.dtype() == DType::BFloat16) return cpu::narrow(src, y.data<bfloat16>(), x.num_elements());
  } else if constexpr (std::is_same_v<From, half> || std::is_same_v<From, bfloat16>) {
    if (y.dtype() == DType::Float32) return cpu::widen(src, y.data<float>(), x.num_elements());
  } else if constexpr (std::is_same_v<From, bool>) {
    // A mask into a floating type (dropout's): each byte, 0 or 1, times the bits of 1.0, which vectorises (a
    // select branches on the random mask, a conversion stays scalar).
    const auto* bytes = reinterpret_cast<const uint8_t*>(src);
    auto mask_bits = [&](auto* bits, auto one) {
      cpu::run_range(x.num_elements(), kParallelGrain, [=](int64_t b, int64_t e) {
        const auto v = one;  // a local: the stores below cannot change it
        for (int64_t i = b; i < e; ++i) bits[i] = static_cast<decltype(v)>(bytes[i] * v);
      });
    };
    if (y.dtype() == DType::Float32) return mask_bits(static_cast<uint32_t*>(y.raw_data()), uint32_t{0x3f800000});
    if (y.dtype() == DType::Float16) return mask_bits(static_cast<uint16_t*>(y.raw_data()), uint16_t{0x3c00});
    if (y.dtype() == DType::BFloat16) return mask_bits(static_cast<uint16_t*>(y.raw_data()), uint16_t{0x3f80});
  }
  EMBER_DISPATCH_ALL(y.dtype(), "cast", {
    // From and To are storage types; the conversion runs between their compute types.
    cpu::unary_loop(src, static_cast<scalar_t*>(y.raw_data()), x.num_elements(),
                    cpu::Unary<From, scalar_t, functors::CastTo<compute_t<scalar_t>>>{});
  });
}

void cast_cpu(const KernelContext& ctx) {
  EMBER_DISPATCH_ALL(ctx.inputs[0].dtype(), "cast", cast_from<scalar_t>(ctx));
}
EMBER_REGISTER_KERNEL(cast, CPU, cast_cpu, EMBER_ALL_DTYPES);

}  // namespace
}  // namespace ember
