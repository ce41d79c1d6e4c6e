#include "layers/merge.h"

#include <algorithm>

#include "framework/ops/array.h"
#include "framework/ops/elementwise.h"

namespace ember::layers {

namespace {

std::string list_string(const std::vector<Shape>& shapes) {
  std::string s = "[";
  for (size_t i = 0; i < shapes.size(); ++i) s += (i ? ", " : "") + shapes[i].to_string();
  return s + "]";
}

}  // namespace

std::vector<Tensor> Merge::compute_mask(const std::vector<Tensor>& /*xs*/, const std::vector<Tensor>& masks) {
  Tensor out;
  for (const Tensor& m : masks) {
    if (!m.defined()) return {};
    out = out.defined() ? ops::logical_or(out, m) : m;
  }
  return {out};
}

Shape Merge::merged_shape(const std::vector<Shape>& shapes) const {
  EMBER_CHECK(!shapes.empty(), InvalidArgument) << who() << ": expected a list of at least one input, got none";
  int64_t batch = -1;
  for (const Shape& s : shapes) {
    EMBER_CHECK(s.rank() >= 1, InvalidArgument)
        << who() << ": inputs need a batch dimension, got shapes " << list_string(shapes);
    EMBER_CHECK(batch < 0 || s[0] < 0 || s[0] == batch, InvalidArgument)
        << who() << ": cannot merge tensors with different batch sizes, got shapes " << list_string(shapes);
    if (s[0] >= 0) batch = s[0];
  }
  // Per-sample shapes, merged pairwise from the right (Keras's _compute_elemwise_op_output_shape).
  Shape out(shapes[0].begin() + 1, shapes[0].end());
  for (size_t k = 1; k < shapes.size(); ++k) {
    Shape a = out, b(shapes[k].begin() + 1, shapes[k].end());
    if (a.rank() < b.rank()) std::swap(a, b);
    const int64_t lead = a.rank() - b.rank();
    Shape merged(a.begin(), a.begin() + lead);
    for (int64_t i = 0; i < b.rank(); ++i) {
      const int64_t x = a[lead + i], y = b[i];
      if (x < 0 || y < 0) {
        merged.push_back(-1);
      } else if (x == 1 || y == 1) {
        merged.push_back(x == 1 ? y : x);
      } else {
        EMBER_CHECK(x == y, InvalidArgument)
            << who() << ": inputs have incompatible shapes " << shapes[0] << " and " << shapes[k]
            << " (all shapes: " << list_string(shapes) << "); per-sample dimensions must match or be 1";
        merged.push_back(x);
      }
    }
    out = merged;
  }
  Shape result{batch};
  for (int64_t d : out) result.push_back(d);
  return result;
}

void Merge::build(const std::vector<Shape>& input_shapes) { merged_shape(input_shapes); }

Tensor Merge::call(const std::vector<Tensor>& xs, bool training) {
  std::vector<Shape> shapes;
  int64_t rank = 0;
  for (const Tensor& x : xs) {
    shapes.push_back(x.shape());
    rank = std::max(rank, x.rank());
  }
  merged_shape(shapes);  // the batch check: plain broadcasting would stretch a batch of 1
  // Lower-rank inputs get size-1 axes after the batch axis, so NumPy broadcasting aligns them as Keras does.
  std::vector<Tensor> aligned;
  aligned.reserve(xs.size());
  for (const Tensor& x : xs) {
    Tensor t = x;
    for (int64_t r = x.rank(); r < rank; ++r) t = ops::expand_dims(t, 1);
    aligned.push_back(t);
  }
  return merge_function(aligned);
}

}  // namespace ember::layers
