#include "framework/core/tensor.h"

#include "framework/core/trace_hooks.h"

#include <atomic>
#include <cmath>
#include <ostream>

namespace ember {

namespace {
std::atomic<uint64_t> g_next_tensor_id{1};
}

Tensor::Tensor(Shape shape, DType dtype, std::shared_ptr<Storage> storage, size_t offset) {
  int64_t n = shape.num_elements();
  uint64_t id = g_next_tensor_id.fetch_add(1, std::memory_order_relaxed);
  impl_ = std::make_shared<Impl>(Impl{std::move(shape), dtype, n, std::move(storage), offset, id, nullptr});
}

uint64_t Tensor::next_id() { return g_next_tensor_id.load(std::memory_order_relaxed); }

void Tensor::throw_undefined() {
  throw FailedPrecondition("Tensor: this tensor is undefined (default-constructed, holds no value)");
}

void Tensor::throw_symbolic(const char* what) const {
  throw InvalidArgument(std::string(what) + ": got a symbolic tensor of shape " + shape().to_keras_string() + " and dtype " +
                        std::string(dtype_name(dtype())) +
                        " (from layers::Input): it holds no values; in a functional model pass it to layers "
                        "(e.g. layers::Add instead of +), and call the built Model on real tensors");
}

Tensor Tensor::symbolic(const Shape& shape, DType dtype, std::shared_ptr<const detail::KerasHistory> history) {
  EMBER_CHECK(history != nullptr, InvalidArgument) << "Tensor::symbolic: a symbolic tensor needs its history";
  for (int64_t d : shape)
    EMBER_CHECK(d >= -1, InvalidArgument) << "Tensor::symbolic: bad dimension " << d << " in shape " << shape;
  Tensor t(Shape{0}, dtype, std::make_shared<Storage>(0, Device::cpu()), 0);
  t.impl_->shape = shape;
  t.impl_->num_elements = 0;
  t.impl_->history = std::move(history);
  return t;
}

void Tensor::check_type(DType expected, const char* what) const {
  EMBER_CHECK(dtype() == expected, InvalidArgument)
      << what << ": the tensor has dtype " << dtype() << " but " << expected << " was requested";
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  for (int64_t d : shape)
    EMBER_CHECK(d >= 0, InvalidArgument) << "Tensor::empty: negative dimension in shape " << shape;
  if (dtype == DType::String) {
    check_string_device(device, "Tensor::empty");
    return Tensor(shape, dtype, Storage::strings(static_cast<size_t>(shape.num_elements())), 0);
  }
  size_t bytes = static_cast<size_t>(shape.num_elements()) * dtype_size(dtype);
  return Tensor(shape, dtype, std::make_shared<Storage>(bytes, device), 0);
}

void Tensor::check_string_device(Device device, const char* what) {
  EMBER_CHECK(device.is_cpu(), InvalidArgument)
      << what << ": string tensors live on the CPU (as TF keeps tf.string on the host); cannot place one on "
      << device;
}

Tensor Tensor::from_host(const void* src, const Shape& shape, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  if (dtype == DType::String)
    copy_host_elements(t.raw_data(), src, static_cast<size_t>(t.num_elements()), dtype);
  else
    allocator_for(device).copy_from_host(t.raw_data(), src, t.nbytes());
  return t;
}

Tensor Tensor::scalar_of(double value, DType dtype, Device device) {
  Tensor t = empty(Shape{}, dtype, Device::cpu());
  EMBER_DISPATCH_ALL(dtype, "Tensor::scalar_of", {
    if constexpr (std::is_same_v<scalar_t, bool>)
      *t.data<bool>() = value != 0;
    else
      *t.data<scalar_t>() = static_cast<scalar_t>(value);
  });
  return device.is_cpu() ? t : t.to(device);
}

void Tensor::copy_to_host(void* dst) const {
  check_concrete("Tensor: reading values");
  if (detail::t_tensor_tracer) detail::t_tensor_tracer->host_read(*this, "Tensor: reading values");
  if (dtype() == DType::String)
    copy_host_elements(dst, raw_data(), static_cast<size_t>(num_elements()), dtype());
  else
    allocator_for(device()).copy_to_host(dst, raw_data(), nbytes());
}

Tensor Tensor::to(Device target) const {
  check_concrete("Tensor::to");
  if (target == device()) return *this;
  if (dtype() == DType::String) check_string_device(target, "Tensor::to");
  Tensor out;
  if (device().is_cpu()) {
    out = empty(shape(), dtype(), target);
    allocator_for(target).copy_from_host(out.raw_data(), raw_data(), nbytes());
  } else {
    Tensor host = empty(shape(), dtype(), Device::cpu());
    allocator_for(device()).copy_to_host(host.raw_data(), raw_data(), nbytes());
    out = target.is_cpu() ? host : empty(shape(), dtype(), target);
    if (!target.is_cpu()) allocator_for(target).copy_from_host(out.raw_data(), host.raw_data(), nbytes());
  }
  if (detail::t_tensor_tracer)
    detail::t_tensor_tracer->derived("to", *this, out, [target](const Tensor& t) { return t.to(target); });
  return out;
}

Tensor Tensor::view(const Shape& new_shape) const {
  check_concrete("Tensor::view");
  EMBER_CHECK(new_shape.num_elements() == num_elements(), InvalidArgument)
      << "Tensor::view: cannot view a tensor of shape " << shape() << " (" << num_elements() << " elements) as "
      << new_shape << " (" << new_shape.num_elements() << " elements)";
  Tensor out(new_shape, dtype(), storage(), impl().offset);
  if (detail::t_tensor_tracer)
    detail::t_tensor_tracer->derived("view", *this, out, [new_shape](const Tensor& t) { return t.view(new_shape); });
  return out;
}

Tensor Tensor::slice_rows(int64_t begin, int64_t end) const {
  check_concrete("Tensor::slice_rows");
  EMBER_CHECK(rank() >= 1 && 0 <= begin && begin <= end && end <= shape()[0], InvalidArgument)
      << "Tensor::slice_rows: rows [" << begin << ", " << end << ") are out of range for shape " << shape();
  Shape s = shape();
  int64_t row_elems = s[0] ? num_elements() / s[0] : 0;
  s[0] = end - begin;
  Tensor out(s, dtype(), storage(), impl().offset + static_cast<size_t>(begin * row_elems) * dtype_size(dtype()));
  if (detail::t_tensor_tracer)
    detail::t_tensor_tracer->derived("slice_rows", *this, out,
                                     [begin, end](const Tensor& t) { return t.slice_rows(begin, end); });
  return out;
}

Tensor Tensor::clone() const {
  check_concrete("Tensor::clone");
  Tensor out = empty(shape(), dtype(), device());
  if (dtype() == DType::String)
    copy_host_elements(out.raw_data(), raw_data(), static_cast<size_t>(num_elements()), dtype());
  else
    allocator_for(device()).copy_on_device(out.raw_data(), raw_data(), nbytes());
  if (detail::t_tensor_tracer)
    detail::t_tensor_tracer->derived("clone", *this, out, [](const Tensor& t) { return t.clone(); });
  return out;
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.to_string(); }

}  // namespace ember
