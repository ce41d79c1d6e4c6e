// CUDA registration of random_uniform, random_normal and truncated_normal (kernels in random.cu). The values
// the CPU kernel derives from the attributes before its loop (minval/maxval rounded to the output dtype, the
// range, mean and stddev in the compute type) are derived here the same way, with the same host types.
#include <type_traits>

#include "framework/core/error.h"
#include "framework/ops/cuda/kernel_util.h"
#include "framework/ops/cuda/random_launch.h"
#include "framework/ops/dispatch.h"

namespace ember {
namespace {

void random_unimplemented(const KernelContext& ctx, DType dtype) {
  throw make_error<Unimplemented>(ctx.op, ": dtype ", dtype, " is not implemented on CUDA");
}

// Launches random_uniform for storage type T (discarded branches need a template, hence not inline in the
// dispatch).
template <class T>
bool random_uniform_launch(const RandomAttrs& a, cuda::DT dt, void* y, int64_t n, cudaStream_t stream) {
  if constexpr (std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>) {
    using U = std::make_unsigned_t<T>;
    const T lo = static_cast<T>(a.a);
    const U range = static_cast<U>(static_cast<U>(static_cast<T>(a.b)) - static_cast<U>(lo));
    return cuda::launch_random_uniform_integer(dt, y, n, a.key, a.counter, lo, range, stream);
  } else if constexpr (!std::is_integral_v<T>) {
    using C = compute_t<T>;
    // minval and maxval take the output dtype first, as on the CPU (and in TF).
    const C lo = static_cast<C>(static_cast<T>(a.a));
    const C range = static_cast<C>(static_cast<T>(a.b)) - lo;
    return cuda::launch_random_uniform_floating(dt, y, n, a.key, a.counter, lo, range, stream);
  } else {
    return false;
  }
}

void random_uniform_cuda(const KernelContext& ctx) {
  const auto& a = std::get<RandomAttrs>(ctx.attrs);
  Tensor& y = ctx.outputs[0];
  const int64_t n = y.num_elements();
  if (n == 0) return;
  const int dev = cuda::device_of(ctx);
  bool ok = false;
  EMBER_DISPATCH_NUMERIC(y.dtype(), "random_uniform", {
    ok = random_uniform_launch<scalar_t>(a, cuda::to_dt(y.dtype()), y.raw_data(), n, cuda::stream(dev));
  });
  if (!ok) random_unimplemented(ctx, y.dtype());
  cuda::after_launch("random_uniform", dev);
}

void random_normal_like_cuda(const KernelContext& ctx, bool truncated) {
  const auto& a = std::get<RandomAttrs>(ctx.attrs);
  Tensor& y = ctx.outputs[0];
  const int64_t n = y.num_elements();
  if (n == 0) return;
  const int dev = cuda::device_of(ctx);
  bool ok = false;
  EMBER_DISPATCH_FLOAT(y.dtype(), op_name(ctx.op), {
    using C = compute_t<scalar_t>;
    const C mean = static_cast<C>(a.a), stddev = static_cast<C>(a.b);
    ok = cuda::launch_random_normal(cuda::to_dt(y.dtype()), truncated, y.raw_data(), n, a.key, a.counter, mean,
                                    stddev, cuda::stream(dev));
  });
  if (!ok) random_unimplemented(ctx, y.dtype());
  cuda::after_launch(op_name(ctx.op), dev);
}

void random_normal_cuda(const KernelContext& ctx) { random_normal_like_cuda(ctx, false); }
void truncated_normal_cuda(const KernelContext& ctx) { random_normal_like_cuda(ctx, true); }

}  // namespace

EMBER_REGISTER_KERNEL(random_uniform, CUDA, random_uniform_cuda, DType::Float32, DType::Float64, DType::Float16,
                      DType::BFloat16, DType::Int32, DType::Int64);
EMBER_REGISTER_KERNEL(random_normal, CUDA, random_normal_cuda, DType::Float32, DType::Float64, DType::Float16,
                      DType::BFloat16);
EMBER_REGISTER_KERNEL(truncated_normal, CUDA, truncated_normal_cuda, DType::Float32, DType::Float64,
                      DType::Float16, DType::BFloat16);

}  // namespace ember
