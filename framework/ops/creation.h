#pragma once
// Tensor creation (TF: tf.zeros, tf.ones, tf.fill, tf.range, tf.eye, tf.linspace), on the default device.
#include <optional>

#include "framework/core/tensor.h"

namespace ember::ops {

Tensor zeros(const Shape& shape, DType dtype = DType::Float32);
Tensor ones(const Shape& shape, DType dtype = DType::Float32);
Tensor full(const Shape& shape, double value, DType dtype = DType::Float32);
Tensor zeros_like(const Tensor& x);
Tensor ones_like(const Tensor& x);
// [start, limit) in steps of delta. Without dtype: Int32 when all three are whole numbers, else Float32.
Tensor range(double start, double limit, double delta = 1, std::optional<DType> dtype = std::nullopt);
Tensor range(double limit);
// Identity matrix of num_rows x num_columns (num_columns < 0: square).
Tensor eye(int64_t num_rows, int64_t num_columns = -1, DType dtype = DType::Float32);
// num evenly spaced values from start to stop inclusive.
Tensor linspace(double start, double stop, int64_t num, DType dtype = DType::Float32);

}  // namespace ember::ops
