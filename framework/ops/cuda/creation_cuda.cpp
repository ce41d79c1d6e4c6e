// CUDA registration of the creation ops fill, range and linspace (kernels in creation.cu). Every value the
// CPU kernel derives from the attributes before its loop (the fill value, start/delta/stop rounded to the
// output dtype, linspace's step) is derived here the same way, with the same host types, so the device only
// evaluates the per-element expression.
#include <cstring>
#include <type_traits>

#include "framework/core/error.h"
#include "framework/ops/cuda/creation_launch.h"
#include "framework/ops/cuda/kernel_util.h"
#include "framework/ops/dispatch.h"

namespace ember {
namespace {

void creation_unimplemented(const KernelContext& ctx, DType dtype) {
  throw make_error<Unimplemented>(ctx.op, ": dtype ", dtype, " is not implemented on CUDA");
}

void fill_cuda(const KernelContext& ctx) {
  const auto& a = std::get<CreationAttrs>(ctx.attrs);
  Tensor& y = ctx.outputs[0];
  const int64_t n = y.num_elements();
  if (n == 0) return;
  uint64_t bits = 0;
  EMBER_DISPATCH_ALL(y.dtype(), "fill", {
    const scalar_t v = static_cast<scalar_t>(a.a);
    static_assert(sizeof(scalar_t) <= sizeof(bits));
    std::memcpy(&bits, &v, sizeof(scalar_t));
  });
  const int dev = cuda::device_of(ctx);
  if (!cuda::launch_fill(static_cast<int>(dtype_size(y.dtype())), bits, y.raw_data(), n, cuda::stream(dev)))
    creation_unimplemented(ctx, y.dtype());
  cuda::after_launch("fill", dev);
}

void range_cuda(const KernelContext& ctx) {
  const auto& a = std::get<CreationAttrs>(ctx.attrs);
  Tensor& y = ctx.outputs[0];
  const int64_t n = y.num_elements();
  if (n == 0) return;
  const int dev = cuda::device_of(ctx);
  bool ok = false;
  EMBER_DISPATCH_NUMERIC(y.dtype(), "range", {
    if constexpr (std::is_integral_v<scalar_t>) {
      ok = cuda::launch_range_integer(cuda::to_dt(y.dtype()), y.raw_data(), n, static_cast<int64_t>(a.a),
                                      static_cast<int64_t>(a.c), cuda::stream(dev));
    } else {
      using C = compute_t<scalar_t>;
      // The arguments take the output dtype first, as on the CPU (and in TF).
      const C start = static_cast<C>(static_cast<scalar_t>(a.a)), delta = static_cast<C>(static_cast<scalar_t>(a.c));
      ok = cuda::launch_range_floating(cuda::to_dt(y.dtype()), y.raw_data(), n, start, delta, cuda::stream(dev));
    }
  });
  if (!ok) creation_unimplemented(ctx, y.dtype());
  cuda::after_launch("range", dev);
}

void linspace_cuda(const KernelContext& ctx) {
  const auto& a = std::get<CreationAttrs>(ctx.attrs);
  Tensor& y = ctx.outputs[0];
  const int64_t n = y.num_elements();
  if (n == 0) return;
  const int dev = cuda::device_of(ctx);
  bool ok = false;
  EMBER_DISPATCH_FLOAT(y.dtype(), "linspace", {
    using C = compute_t<scalar_t>;
    const C start = static_cast<C>(static_cast<scalar_t>(a.a)), stop = static_cast<C>(static_cast<scalar_t>(a.b));
    const C step = n > 1 ? (stop - start) / static_cast<C>(n - 1) : C(0);
    ok = cuda::launch_linspace(cuda::to_dt(y.dtype()), y.raw_data(), n, start, stop, step, cuda::stream(dev));
  });
  if (!ok) creation_unimplemented(ctx, y.dtype());
  cuda::after_launch("linspace", dev);
}

EMBER_REGISTER_KERNEL(fill, CUDA, fill_cuda, DType::Float32, DType::Float64, DType::Float16, DType::BFloat16,
                      DType::Int32, DType::Int64, DType::UInt8, DType::Bool);
EMBER_REGISTER_KERNEL(range, CUDA, range_cuda, DType::Int32, DType::Int64, DType::Float32, DType::Float64,
                      DType::Float16, DType::BFloat16);
EMBER_REGISTER_KERNEL(linspace, CUDA, linspace_cuda, DType::Float32, DType::Float64, DType::Float16,
                      DType::BFloat16);

}  // namespace
}  // namespace ember
