#pragma once
// Internal: when a relu may run as a oneDNN post-op of a fused convolution or matmul, and the fused activations in
// place.
#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <limits>

#include "framework/core/parallel.h"
#include "framework/core/tensor.h"
#include "framework/ops/attrs.h"
#include "framework/ops/cpu/elementwise_loops.h"
#include "framework/ops/cpu/half_convert.h"
#include "framework/ops/functors.h"

namespace ember::cpu {

// The largest |v| of n values, in float32, as its bit pattern (sign cleared, so unsigned order is the order of
// magnitudes): 0x7f800000 or more when some v is infinite or NaN.
template <class T>
uint32_t max_abs_bits(const T* v, int64_t n) {
  std::atomic<uint32_t> result{0};
  parallel_for(n, kParallelGrain, [&](int64_t begin, int64_t end) {
    uint32_t m = 0;
    for (int64_t i = begin; i < end; ++i)
      m = std::max(m, std::bit_cast<uint32_t>(static_cast<float>(to_compute(v[i]))) & 0x7fffffffu);
    uint32_t seen = result.load();
    while (seen < m && !result.compare_exchange_weak(seen, m)) {
    }
  });
  return result.load();
}

// Whether oneDNN's relu post-op gives relu of the fused op's biased sums of `terms` products of x and w (up to
// the sign of a zero): when no sum can overflow, the output holds no infinity and no NaN, and oneDNN's
// max(v, 0) agrees with relu's select (oneDNN's relu turns a NaN into 0). Every sum is bounded by
// terms * max|x| * max|w| + max|b|; half of FLT_MAX leaves room for the rounding of float32 partial sums.
// The same from the three operands' max_abs_bits.
inline bool relu_post_op_exact_bits(uint32_t x, uint32_t w, uint32_t b, int64_t terms) {
  if (x >= 0x7f800000u || w >= 0x7f800000u || b >= 0x7f800000u) return false;
  return static_cast<double>(terms) * std::bit_cast<float>(x) * std::bit_cast<float>(w) + std::bit_cast<float>(b) <
         std::numeric_limits<float>::max() / 2.0;
}
template <class T>
bool relu_post_op_exact(const Tensor& x, const Tensor& w, const Tensor& b, int64_t terms) {
  // Each operand's maximum only where the ones before it were finite, as a loop returning early would.
  const uint32_t mx = max_abs_bits(x.data<T>(), x.num_elements());
  if (mx >= 0x7f800000u) return false;
  const uint32_t mw = max_abs_bits(w.data<T>(), w.num_elements());
  if (mw >= 0x7f800000u) return false;
  return relu_post_op_exact_bits(mx, mw, max_abs_bits(b.data<T>(), b.num_elements()), terms);
}

// y = relu(y) in T, the values relu would give.
template <class T>
void relu_in_place(T* y, int64_t n) {
  unary_loop(y, y, n, Unary<T, T, functors::Relu>{});
}

// y = a(y) in T, the values the activation's own op would give (nothing for None).
template <class T>
void activation_in_place(T* y, int64_t n, FusedActivation a) {
  switch (a) {
    case FusedActivation::None: return;
    case FusedActivation::Relu: return relu_in_place(y, n);
    case FusedActivation::Tanh: return unary_loop(y, y, n, Unary<T, T, functors::Tanh>{});
    case FusedActivation::Sigmoid: return unary_loop(y, y, n, Unary<T, T, functors::Sigmoid>{});
  }
}

}  // namespace ember::cpu
