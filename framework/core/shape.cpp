#include "framework/core/shape.h"

#include <algorithm>
#include <ostream>

#include "framework/core/error.h"

namespace ember {

int64_t Shape::dim(int64_t i) const { return data()[normalize_axis(i, rank(), "Shape::dim")]; }

int64_t Shape::num_elements() const {
  int64_t n = 1;
  for (int64_t d : *this) n *= d;
  return n;
}

void Shape::push_back(int64_t d) {
  if (rank_ < kInline) {
    inline_[rank_++] = d;
    return;
  }
  if (rank_ == kInline) heap_.assign(inline_, inline_ + kInline);
  heap_.push_back(d);
  ++rank_;
}

bool Shape::operator==(const Shape& o) const { return std::equal(begin(), end(), o.begin(), o.end()); }

std::vector<int64_t> Shape::strides() const {
  std::vector<int64_t> s(rank_);
  int64_t acc = 1;
  for (size_t i = rank_; i-- > 0;) {
    s[i] = acc;
    acc *= data()[i];
  }
  return s;
}

std::string Shape::to_string() const { return format(false); }

std::string Shape::to_keras_string() const { return format(true); }

std::string Shape::format(bool none_for_unknown) const {
  std::string s = "(";
  for (size_t i = 0; i < rank_; ++i) {
    if (i) s += ", ";
    s += none_for_unknown && data()[i] == -1 ? std::string("None") : std::to_string(data()[i]);
  }
  if (rank_ == 1) s += ",";
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
