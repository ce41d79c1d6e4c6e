#pragma once
// NumPy broadcasting of shapes, shared by every op front end and kernel, and the iteration plan both
// backends' elementwise kernels walk.
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "framework/core/shape.h"

namespace ember {

// The broadcast of a and b; throws InvalidArgument naming op and both shapes when incompatible.
Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b);
// Strides (in elements) to read a tensor of shape `in` as if it had shape `out` (0 on broadcast dims).
// `in` must broadcast to `out`.
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out);

// The iteration space of a broadcast: dimensions with out size 1 dropped and adjacent dimensions
// merged wherever every input steps through them contiguously. The last dimension is the inner loop.
template <size_t N>
struct BroadcastPlan {
  std::vector<int64_t> dims;
  std::vector<std::array<int64_t, N>> strides;  // per dim, per input (0 on broadcast dims)

  BroadcastPlan(const Shape& out, const std::array<const Shape*, N>& in) {
    std::array<std::vector<int64_t>, N> s;
    for (size_t k = 0; k < N; ++k) s[k] = broadcast_strides(*in[k], out);
    for (int64_t i = 0; i < out.rank(); ++i) {
      if (out[i] == 1) continue;
      std::array<int64_t, N> st;
      for (size_t k = 0; k < N; ++k) st[k] = s[k][static_cast<size_t>(i)];
      if (!dims.empty()) {
        bool mergeable = true;
        for (size_t k = 0; k < N; ++k) mergeable &= strides.back()[k] == st[k] * out[i];
        if (mergeable) {
          dims.back() *= out[i];
          strides.back() = st;
          continue;
        }
      }
      dims.push_back(out[i]);
      strides.push_back(st);
    }
    if (dims.empty()) {  // every dimension is 1
      dims.push_back(1);
      strides.push_back({});
    }
  }
  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  int64_t inner() const { return dims.back(); }
};

}  // namespace ember
