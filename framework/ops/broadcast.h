#pragma once
// NumPy broadcasting of shapes, shared by every op front end and kernel.
#include <vector>

#include "framework/core/shape.h"

namespace ember {

// The broadcast of a and b; throws InvalidArgument naming op and both shapes when incompatible.
Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b);
// Strides (in elements) to read a tensor of shape `in` as if it had shape `out` (0 on broadcast dims).
// `in` must broadcast to `out`.
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out);

}  // namespace ember
