#pragma once
// Test inputs for float16 and bfloat16 kernels and graphs.
#include <cstdint>
#include <iterator>
#include <limits>
#include <vector>

#include "framework/ember.h"

namespace ember::testing {

// Values at the half types' edges among ordinary ones: signed zeros, infinities, NaN, float16's and bfloat16's
// subnormals, their largest finite values and what overflows them, and ties of rounding to each (1 + 2^-11 and
// 1 + 3 * 2^-11 are halfway between float16 neighbours, 1 + 2^-8 and 1 + 3 * 2^-8 between bfloat16 ones).
inline Tensor half_edge_values(int64_t rows, int64_t cols, uint64_t seed) {
  std::vector<float> v = random::normal({rows, cols}, {.seed = seed}).to_vector<float>();
  const float inf = std::numeric_limits<float>::infinity();
  const float special[] = {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(),
                           6e-8f, -3e-7f, 1e-5f, 65504.0f, 65520.0f, -70000.0f,
                           1e-39f, -5e-40f, 3.3e38f,
                           1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, -(1.0f + 0x1p-11f),
                           1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, 2.0f + 0x1p-7f, 0.5f, -2.5f, 3.5f};
  for (size_t i = 0; i < std::size(special) && i < v.size(); ++i) v[i * 5 % v.size()] = special[i];
  return Tensor::from_vector(v, {rows, cols});
}

// Three steps h = tanh(h @ cast(w, half)), as an RNN cell's under a mixed policy: three casts of one float32
// weight, which the graph compiler merges. Eager widens each cast's gradient before summing them in float32.
inline Tensor three_half_steps(const Tensor& x, const Variable& w, DType half) {
  Tensor h = ops::cast(x, half);
  for (int t = 0; t < 3; ++t) h = ops::tanh(ops::matmul(h, ops::cast(w.read_value(), half)));
  return ops::cast(h, DType::Float32);
}

}  // namespace ember::testing
