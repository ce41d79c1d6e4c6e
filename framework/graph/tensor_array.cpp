#include "framework/graph/tensor_array.h"

#include "framework/core/error_context.h"

#include "framework/graph/trace.h"
#include "framework/ops/array.h"
#include "framework/ops/creation.h"
#include "framework/ops/elementwise.h"

namespace ember {

namespace {

Shape with_size(int64_t size, const Shape& element) {
  Shape s{size};
  for (int64_t d : element) s.push_back(d);
  return s;
}

}  // namespace

TensorArray::TensorArray(DType dtype, int64_t size, std::optional<Shape> element_shape)
    : dtype_(dtype), size_(size), element_shape_(std::move(element_shape)) {
  EMBER_CHECK(size >= 0, InvalidArgument) << "TensorArray: size must be non-negative, got " << size;
  if (element_shape_) buffer_ = ops::zeros(with_size(size_, *element_shape_), dtype_);
}

TensorArray::TensorArray(const Tensor& stacked) {
  EMBER_CHECK(stacked.defined() && stacked.rank() >= 1, InvalidArgument)
      << "TensorArray: the stacked form must be a tensor of rank 1 or more"
      << (stacked.defined() ? ", got shape " + stacked.shape().to_string() : std::string(", got an undefined one"));
  dtype_ = stacked.dtype();
  size_ = stacked.shape()[0];
  element_shape_ = Shape(std::vector<int64_t>(stacked.shape().begin() + 1, stacked.shape().end()));
  buffer_ = stacked;
}

namespace {

// A traced index is checked where the graph runs, by a gather reading at it, whose error then names the method.
template <class F>
Tensor at_traced_index(const char* what, int64_t size, F&& body) {
  return with_error_context<InvalidArgument>(
      [what, size](const InvalidArgument& e) {
        throw InvalidArgument(std::string("TensorArray.") + what + ": the index is not in [0, " + std::to_string(size) +
                              ") (" + e.what() + ")");
      },
      std::forward<F>(body));
}

}  // namespace

Tensor TensorArray::index_tensor(int64_t index, const char* what) const {
  EMBER_CHECK(index >= 0 && index < size_, InvalidArgument)
      << "TensorArray." << what << ": index " << index << " is not in [0, " << size_ << ")";
  return Tensor::scalar<int64_t>(index);
}

void TensorArray::check_index(const Tensor& index, const char* what) const {
  EMBER_CHECK(index.defined() && index.rank() == 0 &&
                  (index.dtype() == DType::Int32 || index.dtype() == DType::Int64),
              InvalidArgument)
      << "TensorArray." << what << ": the index must be a 0-d int32 or int64 tensor"
      << (index.defined() ? ", got " + std::string(dtype_name(index.dtype())) + index.shape().to_string()
                          : std::string(", got an undefined one"));
  // A value known now is checked now; a traced one when it is read (gather checks its indices).
  if (!graph::is_traced(index)) {
    const int64_t i = index.dtype() == DType::Int32 ? index.item<int32_t>() : index.item<int64_t>();
    index_tensor(i, what);
  }
}

TensorArray TensorArray::write(const Tensor& index, const Tensor& value) const {
  check_index(index, "write");
  EMBER_CHECK(value.defined() && value.dtype() == dtype_, InvalidArgument)
      << "TensorArray.write: the array holds " << dtype_name(dtype_) << ", got "
      << (value.defined() ? std::string(dtype_name(value.dtype())) : std::string("an undefined tensor"));
  if (element_shape_) {
    EMBER_CHECK(value.shape() == *element_shape_, InvalidArgument)
        << "TensorArray.write: the elements have shape " << *element_shape_ << ", got " << value.shape();
  }
  TensorArray out = *this;
  if (!out.element_shape_) {
    out.element_shape_ = value.shape();
    out.buffer_ = ops::zeros(with_size(size_, value.shape()), dtype_).to(value.device());
  }
  // Element `index` takes value, the others stay: where(range == index, value, buffer), broadcast.
  Shape mask_shape(std::vector<int64_t>(static_cast<size_t>(value.rank()) + 1, 1));
  mask_shape[0] = size_;
  Tensor positions = ops::range(0, static_cast<double>(size_), 1, index.dtype()).to(index.device());
  // Where the index is traced, the mask compares with positions[index] (the same value), so that a call with an
  // index out of range fails there, as an eager write does, instead of writing nothing.
  const Tensor at = graph::is_traced(index)
                        ? at_traced_index("write", size_, [&] { return ops::gather(positions, index); })
                        : index;
  Tensor mask = ops::reshape(ops::equal(positions, at), mask_shape);
  out.buffer_ = ops::where(mask, ops::expand_dims(value, 0), buffer_.defined() ? buffer_ : out.buffer_);
  return out;
}

TensorArray TensorArray::write(int64_t index, const Tensor& value) const {
  return write(index_tensor(index, "write"), value);
}

Tensor TensorArray::read(const Tensor& index) const {
  check_index(index, "read");
  if (!buffer_.defined()) {
    EMBER_CHECK(element_shape_, FailedPrecondition)
        << "TensorArray.read: nothing was written yet and the element shape is unknown; give element_shape";
  }
  if (!graph::is_traced(index)) return ops::gather(buffer_, index);
  return at_traced_index("read", size_, [&] { return ops::gather(buffer_, index); });
}

Tensor TensorArray::read(int64_t index) const { return read(index_tensor(index, "read")); }

Tensor TensorArray::stack() const {
  EMBER_CHECK(buffer_.defined(), FailedPrecondition)
      << "TensorArray.stack: nothing was written yet and the element shape is unknown; give element_shape";
  return buffer_;
}

TensorArray TensorArray::unstack(const Tensor& value) const {
  EMBER_CHECK(value.defined() && value.rank() >= 1 && value.shape()[0] == size_ && value.dtype() == dtype_,
              InvalidArgument)
      << "TensorArray.unstack: expected a " << dtype_name(dtype_) << " tensor whose first dimension is " << size_
      << (value.defined() ? ", got " + std::string(dtype_name(value.dtype())) + value.shape().to_string()
                          : std::string(", got an undefined one"));
  TensorArray out(value);
  if (element_shape_) {
    EMBER_CHECK(*out.element_shape_ == *element_shape_, InvalidArgument)
        << "TensorArray.unstack: the elements have shape " << *element_shape_ << ", got slices of shape "
        << *out.element_shape_;
  }
  return out;
}

}  // namespace ember
