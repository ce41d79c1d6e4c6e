#pragma once
// Reductions over any set of axes (TF: tf.reduce_*, tf.math.argmax).
#include <initializer_list>
#include <optional>
#include <vector>

#include "framework/core/tensor.h"

namespace ember::ops {

// Which axes to reduce: all of them by default (TF's axis=None), else the listed ones (negative
// counts from the end; an empty list reduces nothing).
struct Axes {
  Axes() = default;
  Axes(std::initializer_list<int64_t> axes) : axes(std::vector<int64_t>(axes)) {}
  Axes(std::vector<int64_t> axes) : axes(std::move(axes)) {}
  Axes(int64_t axis) : axes(std::vector<int64_t>{axis}) {}
  Axes(int axis) : axes(std::vector<int64_t>{axis}) {}
  std::optional<std::vector<int64_t>> axes;
};

Tensor reduce_sum(const Tensor& x, Axes axis = {}, bool keepdims = false);
Tensor reduce_mean(const Tensor& x, Axes axis = {}, bool keepdims = false);   // integers: truncating
Tensor reduce_max(const Tensor& x, Axes axis = {}, bool keepdims = false);    // empty: -inf / lowest
Tensor reduce_min(const Tensor& x, Axes axis = {}, bool keepdims = false);
Tensor reduce_prod(const Tensor& x, Axes axis = {}, bool keepdims = false);
Tensor reduce_all(const Tensor& x, Axes axis = {}, bool keepdims = false);    // bool
Tensor reduce_any(const Tensor& x, Axes axis = {}, bool keepdims = false);    // bool
Tensor reduce_logsumexp(const Tensor& x, Axes axis = {}, bool keepdims = false);
Tensor reduce_variance(const Tensor& x, Axes axis = {}, bool keepdims = false);  // population variance
Tensor reduce_std(const Tensor& x, Axes axis = {}, bool keepdims = false);
// Index of the largest/smallest value along axis (first on ties), as output_type (Int32 or Int64).
Tensor argmax(const Tensor& x, int64_t axis = 0, DType output_type = DType::Int64);
Tensor argmin(const Tensor& x, int64_t axis = 0, DType output_type = DType::Int64);

}  // namespace ember::ops
