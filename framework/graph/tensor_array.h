#pragma once
// TensorArray (TF: tf.TensorArray, fixed size): a list of `size` tensors of one dtype and shape, written and
// read at indices that may be traced tensors (a while_loop's counter), then stacked. A value, as in TF: write
// returns a new TensorArray. Through ops::while_loop it travels as a loop variable in its stacked form:
//
//   TensorArray outs(DType::Float32, steps, Shape{batch, units});
//   auto r = ops::while_loop(cond, [&](const std::vector<Tensor>& v) -> std::vector<Tensor> {
//     Tensor h = ops::tanh(...);
//     return {ops::add(v[0], one), h, TensorArray(v[2]).write(v[0], h).stack()};
//   }, {t0, h0, outs.stack()});
//   Tensor all = r[2];   // [steps, batch, units]
//
// Elements never written read as zeros. Writing and reading are differentiable (to the value written and to
// the array); each write costs a pass over the whole array.
#include <cstdint>
#include <optional>

#include "framework/core/tensor.h"

namespace ember {

class TensorArray {
 public:
  // `size` elements of `element_shape` (or of the shape of the first value written, when not given).
  TensorArray(DType dtype, int64_t size, std::optional<Shape> element_shape = std::nullopt);
  // The array whose stack() is `stacked` ([size, element shape...]).
  explicit TensorArray(const Tensor& stacked);

  // The array with element `index` (0-d int32/int64, or a number) set to `value`.
  TensorArray write(const Tensor& index, const Tensor& value) const;
  TensorArray write(int64_t index, const Tensor& value) const;
  Tensor read(const Tensor& index) const;
  Tensor read(int64_t index) const;
  // All elements, stacked along a new first axis: [size, element shape...].
  Tensor stack() const;
  // The array of value's slices along its first axis (which must be size long).
  TensorArray unstack(const Tensor& value) const;

  int64_t size() const { return size_; }
  DType dtype() const { return dtype_; }
  // The elements' shape, once known.
  const std::optional<Shape>& element_shape() const { return element_shape_; }

 private:
  Tensor index_tensor(int64_t index, const char* what) const;
  void check_index(const Tensor& index, const char* what) const;
  DType dtype_;
  int64_t size_;
  std::optional<Shape> element_shape_;
  Tensor buffer_;  // [size, element shape...], once the element shape is known
};

}  // namespace ember
