#pragma once
// Linear algebra (TF: tf.linalg.matmul, and the fused MatMul + BiasAdd (+ Relu) of TF's remapper).
#include "framework/core/tensor.h"

namespace ember::ops {

struct MatMulOptions {
  bool transpose_a = false;
  bool transpose_b = false;
};
// a @ b for rank >= 2 operands; leading (batch) dimensions broadcast like NumPy. Float32 runs on
// oneDNN; half types accumulate in float32.
Tensor matmul(const Tensor& a, const Tensor& b, MatMulOptions options = {});
// matmul(a, b) + bias as one op (TF's _FusedMatMul with fused_ops [BiasAdd]): bias has one value per column
// of the product, and the values round as the two ops would. Float types only. What Dense runs.
Tensor matmul_bias(const Tensor& a, const Tensor& b, const Tensor& bias, MatMulOptions options = {});
// relu(matmul_bias(a, b, bias)) as one op (fused_ops [BiasAdd, Relu]), NaN and infinities as relu gives them:
// what Dense(activation="relu") runs.
Tensor matmul_bias_relu(const Tensor& a, const Tensor& b, const Tensor& bias, MatMulOptions options = {});

}  // namespace ember::ops
