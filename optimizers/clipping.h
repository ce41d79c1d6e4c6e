#pragma once
// Gradient clipping exactly as Keras 3 computes it (tf.clip_by_norm and Keras's clip_by_global_norm).
#include <vector>

#include "framework/core/tensor.h"

namespace ember::optimizers::detail {

// g * clip_norm / max(||g||, clip_norm); an all-zero gradient stays zero.
Tensor clip_by_norm(const Tensor& g, double clip_norm);
// Scales every gradient by clip_norm / max(global norm, clip_norm); a non-finite global norm turns every
// gradient into NaN, as Keras does.
void clip_by_global_norm(std::vector<Tensor>& grads, double clip_norm);

}  // namespace ember::optimizers::detail
