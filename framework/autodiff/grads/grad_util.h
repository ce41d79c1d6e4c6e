#pragma once
// Small helpers the backward formulas of several op families share (internal to grads/).
#include "framework/core/tensor.h"
#include "framework/ops/creation.h"
#include "framework/ops/elementwise.h"

namespace ember::grad_util {

// A 0-d tensor of like's dtype and device holding v (broadcasts against like).
inline Tensor scalar_like(const Tensor& like, double v) { return Tensor::scalar_of(v, like.dtype(), like.device()); }
// dy where mask holds, zero elsewhere (a broadcast 0-d zero: no zero-filled pass).
inline Tensor masked(const Tensor& mask, const Tensor& dy) { return ops::where(mask, dy, scalar_like(dy, 0)); }
// Zero where mask holds, dy elsewhere.
inline Tensor masked_out(const Tensor& mask, const Tensor& dy) { return ops::where(mask, scalar_like(dy, 0), dy); }

}  // namespace ember::grad_util
