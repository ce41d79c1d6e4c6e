#pragma once
// Shape: the dimensions of a tensor (row-major, int64 sizes).
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <string>
#include <vector>

namespace ember {

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}
  template <class It>
  Shape(It first, It last) : dims_(first, last) {}

  int64_t rank() const { return static_cast<int64_t>(dims_.size()); }
  int64_t operator[](int64_t i) const { return dims_[static_cast<size_t>(i)]; }
  int64_t& operator[](int64_t i) { return dims_[static_cast<size_t>(i)]; }
  // Dimension i, where negative i counts from the end; throws InvalidArgument when out of range.
  int64_t dim(int64_t i) const;
  // Product of the dimensions (1 for a scalar).
  int64_t num_elements() const;
  const std::vector<int64_t>& dims() const { return dims_; }
  std::vector<int64_t>::const_iterator begin() const { return dims_.begin(); }
  std::vector<int64_t>::const_iterator end() const { return dims_.end(); }
  void push_back(int64_t d) { dims_.push_back(d); }
  // Row-major strides in elements.
  std::vector<int64_t> strides() const;
  // "(2, 3)", "()" for a scalar, "(5,)" for rank 1 (Python tuple spelling, as TF prints).
  std::string to_string() const;
  // The same with unknown (-1) dimensions as None, as Keras prints symbolic shapes: "(None, 784)".
  std::string to_keras_string() const;

  bool operator==(const Shape& o) const { return dims_ == o.dims_; }
  bool operator!=(const Shape& o) const { return dims_ != o.dims_; }

 private:
  std::string format(bool none_for_unknown) const;
  std::vector<int64_t> dims_;
};

std::ostream& operator<<(std::ostream& os, const Shape& s);

// Maps axis (maybe negative) into [0, rank); throws InvalidArgument naming op otherwise.
int64_t normalize_axis(int64_t axis, int64_t rank, const char* op);

}  // namespace ember
