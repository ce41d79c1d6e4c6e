#include "framework/core/shape.h"

#include <ostream>

#include "framework/core/error.h"

namespace ember {

int64_t Shape::dim(int64_t i) const { return dims_[static_cast<size_t>(normalize_axis(i, rank(), "Shape::dim"))]; }

int64_t Shape::num_elements() const {
  int64_t n = 1;
  for (int64_t d : dims_) n *= d;
  return n;
}

std::vector<int64_t> Shape::strides() const {
  std::vector<int64_t> s(dims_.size());
  int64_t acc = 1;
  for (size_t i = dims_.size(); i-- > 0;) {
    s[i] = acc;
    acc *= dims_[i];
  }
  return s;
}

std::string Shape::to_string() const { return format(false); }

std::string Shape::to_keras_string() const { return format(true); }

std::string Shape::format(bool none_for_unknown) const {
  std::string s = "(";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ", ";
    s += none_for_unknown && dims_[i] == -1 ? std::string("None") : std::to_string(dims_[i]);
  }
  if (dims_.size() == 1) s += ",";
  return s + ")";
}

std::ostream& operator<<(std::ostream& os, const Shape& s) { return os << s.to_string(); }

int64_t normalize_axis(int64_t axis, int64_t rank, const char* op) {
  EMBER_CHECK(axis >= -rank && axis < rank, InvalidArgument)
      << op << ": axis " << axis << " is out of range for a tensor of rank " << rank << " (expected -" << rank
      << " <= axis < " << rank << ")";
  return axis < 0 ? axis + rank : axis;
}

}  // namespace ember
