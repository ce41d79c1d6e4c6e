#pragma once
// Internal: the bias epilogue of the fused CPU ops (conv2d_bias, matmul_bias).
#include <cstdint>

#include "framework/core/parallel.h"
#include "framework/ops/cpu/elementwise_loops.h"
#include "framework/ops/cpu/half_convert.h"
#include "framework/ops/functors.h"

namespace ember::cpu {

// y (rows x channels, row-major) += bias, rounded once into T as add rounds the unfused op's output, then
// relu'd as relu would where `relu` is set: one pass while the rows are in cache.
template <class T>
void add_bias_rows(T* y, const T* bias, int64_t rows, int64_t channels, bool relu) {
  parallel_for(rows, grain_for(channels), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      T* yr = y + r * channels;
      for (int64_t c = 0; c < channels; ++c) yr[c] = from_compute<T>(to_compute(yr[c]) + to_compute(bias[c]));
      if (relu) unary_loop(yr, yr, channels, Unary<T, T, functors::Relu>{});
    }
  });
}

}  // namespace ember::cpu
