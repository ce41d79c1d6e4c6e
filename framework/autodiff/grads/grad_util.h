#pragma once
// Small helpers the backward formulas of several op families share (internal to grads/).
#include "framework/core/tensor.h"
#include "framework/ops/creation.h"
#include "framework/ops/elementwise.h"

namespace ember::grad_util {

// A 0-d tensor of like's dtype and device holding v (broadcasts against like).
inline Tensor scalar_like(const Tensor& like, double v) { return Tensor::scalar_of(v, like.dtype(), like.device()); }
// dy where mask holds, zero elsewhere.
inline Tensor masked(const Tensor& mask, const Tensor& dy) { return ops::where(mask, dy, ops::zeros_like(dy)); }
// Zero where mask holds, dy elsewhere.
inline Tensor masked_out(const Tensor& mask, const Tensor& dy) { return ops::where(mask, ops::zeros_like(dy), dy); }

}  // namespace ember::grad_util
