#pragma once
// Linear algebra (TF: tf.linalg.matmul).
#include "framework/core/tensor.h"

namespace ember::ops {

struct MatMulOptions {
  bool transpose_a = false;
  bool transpose_b = false;
};
// a @ b for rank >= 2 operands; leading (batch) dimensions broadcast like NumPy. Float32 runs on
// oneDNN; half types accumulate in float32.
Tensor matmul(const Tensor& a, const Tensor& b, MatMulOptions options = {});

}  // namespace ember::ops
