#pragma once
// Small helpers the backward formulas of several op families share (internal to grads/).
#include "framework/core/tensor.h"
#include "framework/ops/creation.h"
#include "framework/ops/elementwise.h"

namespace ember::grad_util {

// A 0-d CPU tensor of like's dtype holding v, to combine with like in an op (it broadcasts against like). On a
// GPU the op's dispatch takes the device's cached copy of the value (device_scalar in ops/dispatch.cpp, keyed by
// device, dtype and bits), so a gradient does not upload its constants on every call.
inline Tensor scalar_like(const Tensor& like, double v) { return Tensor::scalar_of(v, like.dtype(), Device::cpu()); }
// dy where mask holds, zero elsewhere (a broadcast 0-d zero: no zero-filled pass).
inline Tensor masked(const Tensor& mask, const Tensor& dy) { return ops::where(mask, dy, scalar_like(dy, 0)); }
// Zero where mask holds, dy elsewhere.
inline Tensor masked_out(const Tensor& mask, const Tensor& dy) { return ops::where(mask, scalar_like(dy, 0), dy); }

}  // namespace ember::grad_util
