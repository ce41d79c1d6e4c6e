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
  Shape(std::initializer_list<int64_t> dims) : Shape(dims.begin(), dims.end()) {}
  explicit Shape(const std::vector<int64_t>& dims) : Shape(dims.begin(), dims.end()) {}
  template <class It>
  Shape(It first, It last) {
    for (; first != last; ++first) push_back(static_cast<int64_t>(*first));
  }

  int64_t rank() const { return static_cast<int64_t>(rank_); }
  int64_t operator[](int64_t i) const { return data()[i]; }
  int64_t& operator[](int64_t i) { return data()[i]; }
  // Dimension i, where negative i counts from the end; throws InvalidArgument when out of range.
  int64_t dim(int64_t i) const;
  // Product of the dimensions (1 for a scalar).
  int64_t num_elements() const;
  // A copy of the dimensions.
  std::vector<int64_t> dims() const { return std::vector<int64_t>(begin(), end()); }
  const int64_t* begin() const { return data(); }
  const int64_t* end() const { return data() + rank_; }
  void push_back(int64_t d);
  // Row-major strides in elements.
  std::vector<int64_t> strides() const;
  // "(2, 3)", "()" for a scalar, "(5,)" for rank 1 (Python tuple spelling, as TF prints).
  std::string to_string() const;
  // The same with unknown (-1) dimensions as None, as Keras prints symbolic shapes: "(None, 784)".
  std::string to_keras_string() const;

  bool operator==(const Shape& o) const;
  bool operator!=(const Shape& o) const { return !(*this == o); }

 private:
  // Up to kInline dimensions live in the object, so making, copying and comparing the shapes of an eager
  // op's tensors allocates nothing; more go to heap_ (empty, unallocated, otherwise).
  static constexpr size_t kInline = 6;
  const int64_t* data() const { return rank_ <= kInline ? inline_ : heap_.data(); }
  int64_t* data() { return rank_ <= kInline ? inline_ : heap_.data(); }
  std::string format(bool none_for_unknown) const;

  int64_t inline_[kInline] = {};
  size_t rank_ = 0;
  std::vector<int64_t> heap_;
};

std::ostream& operator<<(std::ostream& os, const Shape& s);

// Maps axis (maybe negative) into [0, rank); throws InvalidArgument naming op otherwise.
int64_t normalize_axis(int64_t axis, int64_t rank, const char* op);

}  // namespace ember
