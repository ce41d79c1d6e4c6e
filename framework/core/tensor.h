#pragma once
// Tensor: an immutable n-d array value (shape, dtype, device); copies share storage.
#include <cstring>
#include <iosfwd>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "framework/core/allocator.h"
#include "framework/core/device.h"
#include "framework/core/dtype.h"
#include "framework/core/error.h"
#include "framework/core/shape.h"

namespace ember {

namespace detail {
// Where a symbolic tensor comes from in a functional model (defined by framework/model).
struct KerasHistory;
}  // namespace detail

class Tensor {
 public:
  // An undefined tensor (no storage); most uses throw FailedPrecondition.
  Tensor() = default;

  // Uninitialised contiguous tensor (kernels fill it).
  static Tensor empty(const Shape& shape, DType dtype, Device device = default_device());
  // Copies `data` (row-major) into a new tensor of `shape`; the sizes must agree. T = std::string makes a
  // string tensor (CPU only).
  template <class T>
  static Tensor from_vector(const std::vector<T>& data, const Shape& shape, Device device = default_device());
  // A 1-D tensor holding `data`.
  template <class T>
  static Tensor from_vector(const std::vector<T>& data, Device device = default_device()) {
    return from_vector<T>(data, Shape{static_cast<int64_t>(data.size())}, device);
  }
  // A 0-d tensor.
  template <class T>
  static Tensor scalar(T value, Device device = default_device()) {
    return from_vector<T>(std::vector<T>{value}, Shape{}, device);
  }
  // A symbolic tensor (Keras's KerasTensor): a shape whose unknown dimensions are -1 (printed None), a
  // dtype, and the layer call that produces it; it holds no values. Only layers accept it (they record
  // a functional-model node); ops and host reads throw.
  static Tensor symbolic(const Shape& shape, DType dtype, std::shared_ptr<const detail::KerasHistory> history);
  bool is_symbolic() const { return impl().history != nullptr; }
  const std::shared_ptr<const detail::KerasHistory>& keras_history() const { return impl().history; }
  // Throws InvalidArgument naming `what` when this tensor is symbolic.
  void check_concrete(const char* what) const {
    if (impl().history) throw_symbolic(what);
  }

  // A 0-d tensor of `dtype` holding `value` converted (how C++ scalars in ops take a tensor's dtype).
  static Tensor scalar_of(double value, DType dtype, Device device = default_device());

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return impl().shape; }
  DType dtype() const { return impl().dtype; }
  Device device() const { return impl().storage->device(); }
  int64_t rank() const { return shape().rank(); }
  int64_t num_elements() const { return impl().num_elements; }
  size_t nbytes() const { return static_cast<size_t>(num_elements()) * dtype_size(dtype()); }

  // Raw element pointers; valid on any device (host code must only touch CPU ones).
  void* raw_data() { return static_cast<char*>(impl().storage->data()) + impl().offset; }
  const void* raw_data() const { return static_cast<const char*>(impl().storage->data()) + impl().offset; }
  // Typed pointer; throws InvalidArgument when T is not the dtype.
  template <class T>
  T* data() {
    check_type(dtype_v<T>, "Tensor::data");
    return static_cast<T*>(raw_data());
  }
  template <class T>
  const T* data() const {
    check_type(dtype_v<T>, "Tensor::data");
    return static_cast<const T*>(raw_data());
  }

  // Copies the elements to the host; T must be the dtype. Synchronises with the device.
  template <class T>
  std::vector<T> to_vector() const;
  // The single element; T must be the dtype and the tensor must hold exactly one element.
  template <class T>
  T item() const;
  // This tensor on `device` (the same tensor when already there).
  Tensor to(Device device) const;
  // A tensor sharing this storage with another shape of the same element count (no copy).
  Tensor view(const Shape& shape) const;
  // Elements [begin, end) along axis 0, sharing storage (no copy).
  Tensor slice_rows(int64_t begin, int64_t end) const;
  // A deep copy on the same device.
  Tensor clone() const;
  // TF-style text: ember.Tensor([[1. 2.] [3. 4.]], shape=(2, 2), dtype=float32, device=cpu:0).
  std::string to_string() const;
  // Same tensor object (the identity of the value, not elementwise equality).
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }
  // A process-unique id of this tensor object (views get their own); the tape tracks tensors by it.
  uint64_t id() const { return impl().id; }
  // Ids only grow: every tensor made after this call has an id of at least this.
  static uint64_t next_id();
  const std::shared_ptr<Storage>& storage() const { return impl().storage; }
  // True when no other tensor object, copy or view shares this tensor's storage, so its owner may update
  // the buffer in place without any other tensor seeing the change (TF's copy-on-write rule for variable
  // updates). Meaningful only to an owner no other thread is copying from.
  bool is_exclusive() const { return impl_.use_count() == 1 && impl().storage.use_count() == 1; }

 private:
  struct Impl {
    Shape shape;
    DType dtype;
    int64_t num_elements;
    std::shared_ptr<Storage> storage;
    size_t offset;  // bytes into storage
    uint64_t id;
    std::shared_ptr<const detail::KerasHistory> history;  // set only on symbolic tensors
  };
  Tensor(Shape shape, DType dtype, std::shared_ptr<Storage> storage, size_t offset);
  const Impl& impl() const {
    if (!impl_) throw_undefined();
    return *impl_;
  }
  [[noreturn]] static void throw_undefined();
  [[noreturn]] void throw_symbolic(const char* what) const;
  // InvalidArgument naming `what` unless `device` is the CPU, the only home of string tensors.
  static void check_string_device(Device device, const char* what);
  void check_type(DType expected, const char* what) const;
  // Copies this tensor's elements into host memory at dst (constructed std::strings for a string tensor).
  void copy_to_host(void* dst) const;
  static Tensor from_host(const void* src, const Shape& shape, DType dtype, Device device);

  std::shared_ptr<Impl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

template <class T>
Tensor Tensor::from_vector(const std::vector<T>& data, const Shape& shape, Device device) {
  EMBER_CHECK(static_cast<int64_t>(data.size()) == shape.num_elements(), InvalidArgument)
      << "Tensor::from_vector: " << data.size() << " values cannot fill shape " << shape << " ("
      << shape.num_elements() << " elements)";
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes(data.begin(), data.end());
    return from_host(bytes.data(), shape, DType::Bool, device);
  } else {
    return from_host(data.data(), shape, dtype_v<T>, device);
  }
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  check_type(dtype_v<T>, "Tensor::to_vector");
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes(static_cast<size_t>(num_elements()));
    copy_to_host(bytes.data());
    return std::vector<bool>(bytes.begin(), bytes.end());
  } else {
    std::vector<T> out(static_cast<size_t>(num_elements()));
    copy_to_host(out.data());
    return out;
  }
}

template <class T>
T Tensor::item() const {
  EMBER_CHECK(num_elements() == 1, InvalidArgument)
      << "Tensor::item: expected a tensor with one element, got shape " << shape();
  return to_vector<T>()[0];
}

}  // namespace ember
