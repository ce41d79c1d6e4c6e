#pragma once
// Shape and indexing ops (TF: tf.reshape, tf.transpose, tf.concat, tf.gather, tf.pad, ...).
#include <string>
#include <utility>
#include <vector>

#include "framework/core/tensor.h"

namespace ember::ops {

// A view with a new shape; one dimension may be -1 (inferred). No copy.
Tensor reshape(const Tensor& x, const Shape& shape);
// Permutes dimensions; an empty perm reverses them (TF's default).
Tensor transpose(const Tensor& x, std::vector<int64_t> perm = {});
Tensor expand_dims(const Tensor& x, int64_t axis);
// Removes size-1 dimensions: the listed ones (each must be 1), or all of them when empty.
Tensor squeeze(const Tensor& x, std::vector<int64_t> axes = {});
// Joins tensors along an existing axis; all other dimensions must agree.
Tensor concat(const std::vector<Tensor>& xs, int64_t axis);
// Joins tensors of equal shape along a new axis.
Tensor stack(const std::vector<Tensor>& xs, int64_t axis = 0);
// Splits into num equal parts, or into parts of the given sizes (one may be -1), along axis.
std::vector<Tensor> split(const Tensor& x, int64_t num, int64_t axis = 0);
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t axis = 0);
// x[begin : begin + size] per dimension; size -1 takes the rest (TF: tf.slice).
Tensor slice(const Tensor& x, const std::vector<int64_t>& begin, const std::vector<int64_t>& size);

// TF's strided_slice masks (bit i refers to entry i of begin/end/strides).
struct StridedSliceOptions {
  int64_t begin_mask = 0, end_mask = 0, ellipsis_mask = 0, new_axis_mask = 0, shrink_axis_mask = 0;
};
// x[begin:end:strides] with Python semantics (negative indices, clamping, negative strides).
Tensor strided_slice(const Tensor& x, const std::vector<int64_t>& begin, const std::vector<int64_t>& end,
                     const std::vector<int64_t>& strides = {}, StridedSliceOptions options = {});

struct GatherOptions {
  int64_t axis = 0;
  int64_t batch_dims = 0;
};
// Picks slices of params along axis at integer indices; an index outside [0, dim) is InvalidArgument.
Tensor gather(const Tensor& params, const Tensor& indices, GatherOptions options = {});
// out[s] = sum of data rows whose segment id is s (TF: tf.math.unsorted_segment_sum); ids outside
// [0, num_segments) are InvalidArgument. The gradient of gather.
Tensor unsorted_segment_sum(const Tensor& data, const Tensor& segment_ids, int64_t num_segments);

struct OneHotOptions {
  double on_value = 1;
  double off_value = 0;
  int64_t axis = -1;
  DType dtype = DType::Float32;
};
// One-hot encodes integer indices; indices outside [0, depth) give an all-off row (as TF).
Tensor one_hot(const Tensor& indices, int64_t depth, OneHotOptions options = {});

struct PadOptions {
  std::string mode = "CONSTANT";  // "CONSTANT", "REFLECT" or "SYMMETRIC" (case-insensitive)
  double constant_values = 0;
};
// Pads each dimension by paddings[i] = {before, after}.
Tensor pad(const Tensor& x, const std::vector<std::pair<int64_t, int64_t>>& paddings, PadOptions options = {});
// Repeats x multiples[i] times along dimension i.
Tensor tile(const Tensor& x, const std::vector<int64_t>& multiples);
// Broadcasts x to shape with NumPy rules.
Tensor broadcast_to(const Tensor& x, const Shape& shape);

}  // namespace ember::ops
