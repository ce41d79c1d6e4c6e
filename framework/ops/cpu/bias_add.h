#pragma once
// Internal: the bias epilogue of the fused CPU ops (conv2d_bias, matmul_bias).
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "framework/core/parallel.h"
#include "framework/ops/cpu/elementwise_loops.h"
#include "framework/ops/cpu/half_convert.h"
#include "framework/ops/cpu/post_ops.h"
#include "framework/ops/cpu/product_epilogue.h"
#include "framework/ops/functors.h"

namespace ember::cpu {

// y (rows x channels, row-major) += bias, rounded once into T as add rounds the unfused op's output, then the
// activation applied as its op would (on the rounded sums): one pass while the rows are in cache. Half types add
// in float32 blocks (float16's element conversions would keep the loop scalar).
// Rows here is the product's: `epilogue`, when given, then runs on each range of rows the pass finished (a fused
// chain reading them: product_epilogue.h).
template <class T>
void add_bias_rows(T* y, const T* bias, int64_t rows, int64_t channels, FusedActivation activation,
                   const RowEpilogue* epilogue = nullptr) {
  using C = compute_t<T>;
  std::vector<C> widened;
  if constexpr (!std::is_same_v<C, T>) {
    widened.resize(static_cast<size_t>(channels));
    to_compute_n(bias, widened.data(), channels);
  }
  parallel_for(rows, grain_for(channels), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      T* yr = y + r * channels;
      if constexpr (std::is_same_v<C, T>) {
        for (int64_t c = 0; c < channels; ++c) yr[c] += bias[c];
      } else {
        C block[kHalfBlock];
        for (int64_t c0 = 0; c0 < channels; c0 += kHalfBlock) {
          const int64_t k = std::min(kHalfBlock, channels - c0);
          to_compute_n(yr + c0, block, k);
          for (int64_t j = 0; j < k; ++j) block[j] += widened[static_cast<size_t>(c0 + j)];
          from_compute_n(block, yr + c0, k);
        }
      }
      activation_in_place(yr, channels, activation);
    }
    if (epilogue) (*epilogue)(begin, end);
  });
}

}  // namespace ember::cpu
