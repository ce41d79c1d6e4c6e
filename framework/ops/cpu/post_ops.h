#pragma once
// Internal: when a relu may run as a oneDNN post-op of a fused convolution or matmul, and relu in place.
#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <limits>

#include "framework/core/parallel.h"
#include "framework/core/tensor.h"
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
template <class T>
bool relu_post_op_exact(const Tensor& x, const Tensor& w, const Tensor& b, int64_t terms) {
  double max_abs[3];
  const Tensor* operands[] = {&x, &w, &b};
  for (int i = 0; i < 3; ++i) {
    const uint32_t bits = max_abs_bits(operands[i]->data<T>(), operands[i]->num_elements());
    if (bits >= 0x7f800000u) return false;
    max_abs[i] = std::bit_cast<float>(bits);
  }
  return static_cast<double>(terms) * max_abs[0] * max_abs[1] + max_abs[2] < std::numeric_limits<float>::max() / 2.0;
}

// y = relu(y) in T, the values relu would give.
template <class T>
void relu_in_place(T* y, int64_t n) {
  unary_loop(y, y, n, Unary<T, T, functors::Relu>{});
}

}  // namespace ember::cpu
