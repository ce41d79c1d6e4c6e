// CPU kernels of dynamic loss scaling: unscale_gradients (every gradient of a step in one parallel region) and
// update_loss_scale.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <vector>

#include "framework/core/parallel.h"
#include "framework/ops/cpu/half_convert.h"
#include "framework/ops/dispatch.h"

namespace ember {
namespace {

// Whether x / scale and x * (1 / scale) are the same bits for every x: where scale is a power of two whose
// reciprocal is a normal number, both round the same exact quotient (and flush it alike). Dynamic loss scales
// are powers of two (2^15 at first, then doubled or halved).
template <class T>
bool reciprocal_is_exact(T scale) {
  int exponent = 0;
  return std::isnormal(scale) && std::isnormal(T(1) / scale) && std::fabs(std::frexp(scale, &exponent)) == T(0.5);
}

// The loss scale in T, and how to divide by it: ops::div's values, by a multiplication with the reciprocal where
// reciprocal_is_exact says it gives them, which spares the divider.
template <class T>
struct Unscale {
  T scale, inverse;
  bool multiply;
  explicit Unscale(T s) : scale(s), inverse(T(1) / s), multiply(reciprocal_is_exact(s)) {}

  // out[i] = g[i] / scale over [0, n) (out may be g); whether an element was an infinity or a NaN, found as
  // v - v != 0, which vectorises with the arithmetic.
  bool operator()(const T* g, T* out, int64_t n) const {
    int32_t any = 0;
    if (multiply) {
      for (int64_t i = 0; i < n; ++i) {
        const T v = g[i];
        out[i] = v * inverse;
        any |= static_cast<int32_t>(v - v != T(0));
      }
    } else {
      for (int64_t i = 0; i < n; ++i) {
        const T v = g[i];
        out[i] = v / scale;
        any |= static_cast<int32_t>(v - v != T(0));
      }
    }
    return any != 0;
  }
};

// A half gradient's elements [begin, end) widened into out (float32) a block at a time, each block divided while
// it is in L1: the bits of a cast to float32 followed by the division.
constexpr int64_t kWidenBlock = 2048;
template <class H>
bool unscale_half(const H* g, float* out, int64_t begin, int64_t end, const Unscale<float>& u) {
  bool bad = false;
  for (int64_t b = begin; b < end; b += kWidenBlock) {
    const int64_t n = std::min(kWidenBlock, end - b);
    cpu::widen_serial(g + b, out + b, n);
    bad |= u(out + b, out + b, n);
  }
  return bad;
}

// Inputs: the N gradients, then the float32 scale; outputs: the N unscaled gradients, then the flag. The
// gradients' elements are laid end to end and split evenly over the pool, so one region covers the step and each
// thread gets the same share whatever the sizes.
void unscale_gradients_cpu(const KernelContext& ctx) {
  const size_t count = ctx.outputs.size() - 1;
  const float scale = *ctx.inputs[count].data<float>();
  const Unscale<float> u32(scale);
  const Unscale<double> u64(static_cast<double>(scale));
  std::vector<int64_t> end(count);  // end[k]: the elements of gradients 0..k together
  int64_t total = 0;
  for (size_t k = 0; k < count; ++k) end[k] = total += ctx.inputs[k].num_elements();
  std::atomic<bool> bad{false};
  parallel_for(total, kParallelGrain, [&](int64_t begin, int64_t stop) {
    bool any = false;
    for (size_t k = std::upper_bound(end.begin(), end.end(), begin) - end.begin(); k < count && begin < stop; ++k) {
      const int64_t first = k > 0 ? end[k - 1] : 0, b = begin - first, e = std::min(stop, end[k]) - first;
      const Tensor& g = ctx.inputs[k];
      Tensor& out = ctx.outputs[k];
      switch (g.dtype()) {
        case DType::Float16: any |= unscale_half(g.data<half>(), out.data<float>(), b, e, u32); break;
        case DType::BFloat16: any |= unscale_half(g.data<bfloat16>(), out.data<float>(), b, e, u32); break;
        case DType::Float32: any |= u32(g.data<float>() + b, out.data<float>() + b, e - b); break;
        default: any |= u64(g.data<double>() + b, out.data<double>() + b, e - b); break;
      }
      begin = end[k];
    }
    if (any) bad.store(true, std::memory_order_relaxed);
  });
  *ctx.outputs[count].data<bool>() = !bad.load();
}
EMBER_REGISTER_KERNEL(unscale_gradients, CPU, unscale_gradients_cpu, DType::Float16, DType::BFloat16, DType::Float32,
                      DType::Float64);

void update_loss_scale_cpu(const KernelContext& ctx) {
  const float scale = *ctx.inputs[0].data<float>();
  const int64_t counter = *ctx.inputs[1].data<int64_t>();
  const bool finite = *ctx.inputs[2].data<bool>();
  const int64_t growth_steps = std::get<LossScaleAttrs>(ctx.attrs).growth_steps;
  const bool grow = finite && counter + 1 == growth_steps;
  // Doubling and halving are exact (to infinity or a subnormal at the ends, as the multiplications were).
  *ctx.outputs[0].data<float>() = !finite ? scale * 0.5f : grow ? scale * 2.0f : scale;
  *ctx.outputs[1].data<int64_t>() = finite && !grow ? counter + 1 : 0;
}
EMBER_REGISTER_KERNEL(update_loss_scale, CPU, update_loss_scale_cpu, DType::Float32);

}  // namespace
}  // namespace ember
