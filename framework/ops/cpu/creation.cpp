// CPU kernels of the creation ops: fill, range and linspace. The front end has validated the
// values; these only write the preallocated output.
#include <algorithm>
#include <type_traits>

#include "framework/core/parallel.h"
#include "framework/ops/dispatch.h"

namespace ember {
namespace {

void fill_cpu(const KernelContext& ctx) {
  const auto& a = std::get<CreationAttrs>(ctx.attrs);
  Tensor& y = ctx.outputs[0];
  EMBER_DISPATCH_ALL(y.dtype(), "fill", {
    const scalar_t v = static_cast<scalar_t>(a.a);
    scalar_t* out = static_cast<scalar_t*>(y.raw_data());
    parallel_for(y.num_elements(), kParallelGrain, [&](int64_t b, int64_t e) { std::fill(out + b, out + e, v); });
  });
}

// out[i] = start + i * delta, each element computed directly (no running sum, so no drift), as TF.
void range_cpu(const KernelContext& ctx) {
  const auto& a = std::get<CreationAttrs>(ctx.attrs);
  Tensor& y = ctx.outputs[0];
  EMBER_DISPATCH_NUMERIC(y.dtype(), "range", {
    scalar_t* out = static_cast<scalar_t*>(y.raw_data());
    if constexpr (std::is_integral_v<scalar_t>) {
      const int64_t start = static_cast<int64_t>(a.a), delta = static_cast<int64_t>(a.c);
      parallel_for(y.num_elements(), kParallelGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) out[i] = static_cast<scalar_t>(start + i * delta);
      });
    } else {
      using C = compute_t<scalar_t>;
      // The arguments take the output dtype first, as TF converts them to tensors of that dtype.
      const C start = static_cast<C>(static_cast<scalar_t>(a.a)), delta = static_cast<C>(static_cast<scalar_t>(a.c));
      parallel_for(y.num_elements(), kParallelGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) out[i] = static_cast<scalar_t>(start + static_cast<C>(i) * delta);
      });
    }
  });
}

// start + i * step, with the last element exactly stop (TF's LinSpace).
void linspace_cpu(const KernelContext& ctx) {
  const auto& a = std::get<CreationAttrs>(ctx.attrs);
  Tensor& y = ctx.outputs[0];
  EMBER_DISPATCH_FLOAT(y.dtype(), "linspace", {
    using C = compute_t<scalar_t>;
    scalar_t* out = static_cast<scalar_t*>(y.raw_data());
    const int64_t n = y.num_elements();
    const C start = static_cast<C>(static_cast<scalar_t>(a.a)), stop = static_cast<C>(static_cast<scalar_t>(a.b));
    if (n == 1) {
      out[0] = static_cast<scalar_t>(start);
    } else if (n > 1) {
      const C step = (stop - start) / static_cast<C>(n - 1);
      parallel_for(n - 1, kParallelGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) out[i] = static_cast<scalar_t>(start + step * static_cast<C>(i));
      });
      out[n - 1] = static_cast<scalar_t>(stop);
    }
  });
}

EMBER_REGISTER_KERNEL(fill, CPU, fill_cpu, DType::Float32, DType::Float64, DType::Float16, DType::BFloat16,
                      DType::Int32, DType::Int64, DType::UInt8, DType::Bool);
EMBER_REGISTER_KERNEL(range, CPU, range_cpu, DType::Int32, DType::Int64, DType::Float32, DType::Float64,
                      DType::Float16, DType::BFloat16);
EMBER_REGISTER_KERNEL(linspace, CPU, linspace_cpu, DType::Float32, DType::Float64, DType::Float16,
                      DType::BFloat16);

}  // namespace
}  // namespace ember
