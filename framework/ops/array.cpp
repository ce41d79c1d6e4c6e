// Front ends of the shape ops: validation, shape inference and attributes; kernels live in cpu/array.cpp.
#include <algorithm>
#include <cctype>
#include <span>
#include <sstream>

#include "framework/ops/array.h"
#include "framework/ops/broadcast.h"
#include "framework/ops/dispatch.h"

namespace ember::ops {

namespace {

std::string list_str(const std::vector<int64_t>& v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  return os.str() + "]";
}

Tensor run1(OpId op, const Tensor& x, const OutputSpec& spec, Attrs attrs) {
  return run_op(op, std::span<const Tensor>(&x, 1), spec, std::move(attrs));
}

// TF's Reshape rule: zero dims are left out of the product so that a -1 can still be inferred
// beside them (reshaping a (0, 3) tensor to (-1, 0) gives (3, 0)).
Shape resolve_reshape(const Shape& from, const Shape& to) {
  int64_t unknown = -1, product = 1;
  bool to_has_zero = false;
  for (int64_t d = 0; d < to.rank(); ++d) {
    int64_t s = to[d];
    if (s == -1) {
      EMBER_CHECK(unknown < 0, InvalidArgument)
          << "reshape: only one dimension of the target shape " << to << " can be -1 (input shape " << from << ")";
      unknown = d;
    } else {
      EMBER_CHECK(s >= 0, InvalidArgument) << "reshape: target shape " << to << " has the negative dimension " << s
                                           << " (only -1 is allowed; input shape " << from << ")";
      if (s == 0) to_has_zero = true;
      else product *= s;
    }
  }
  Shape out = to;
  if (unknown >= 0) {
    int64_t input_elems = 1;
    bool input_has_zero = false;
    for (int64_t d : from) {
      if (d > 0 || !to_has_zero) input_elems *= d;
      else input_has_zero = true;
    }
    int64_t missing = product ? input_elems / product : 0;
    EMBER_CHECK(input_has_zero || product * missing == input_elems, InvalidArgument)
        << "reshape: cannot reshape a tensor of shape " << from << " (" << from.num_elements()
        << " elements) to " << to << ": the known dimensions multiply to " << product
        << ", which does not divide the element count";
    out[unknown] = missing;
  }
  EMBER_CHECK(out.num_elements() == from.num_elements(), InvalidArgument)
      << "reshape: cannot reshape a tensor of shape " << from << " (" << from.num_elements() << " elements) to "
      << to << " (" << out.num_elements() << " elements)";
  return out;
}

PadMode parse_pad_mode(const std::string& mode) {
  std::string m = mode;
  std::transform(m.begin(), m.end(), m.begin(), [](unsigned char c) { return std::toupper(c); });
  if (m == "CONSTANT") return PadMode::Constant;
  if (m == "REFLECT") return PadMode::Reflect;
  if (m == "SYMMETRIC") return PadMode::Symmetric;
  throw make_error<InvalidArgument>("pad: unknown mode \"", mode,
                                    "\" (expected \"CONSTANT\", \"REFLECT\" or \"SYMMETRIC\")");
}

// x[..., start:start+len, ...] along axis (both already valid).
Tensor slice_axis(const Tensor& x, int64_t axis, int64_t start, int64_t len) {
  std::vector<int64_t> begin(static_cast<size_t>(x.rank()), 0), end(x.shape().begin(), x.shape().end());
  begin[static_cast<size_t>(axis)] = start;
  end[static_cast<size_t>(axis)] = start + len;
  return strided_slice(x, begin, end);
}

}  // namespace

Tensor reshape(const Tensor& x, const Shape& shape) {
  Shape out = resolve_reshape(x.shape(), shape);
  return run1(OpId::reshape, x, OutputSpec{out, x.dtype(), 0}, ShapeAttrs{out});
}

Tensor transpose(const Tensor& x, std::vector<int64_t> perm) {
  int64_t r = x.rank();
  if (perm.empty()) {
    for (int64_t i = r - 1; i >= 0; --i) perm.push_back(i);
  }
  EMBER_CHECK(static_cast<int64_t>(perm.size()) == r, InvalidArgument)
      << "transpose: perm " << list_str(perm) << " has " << perm.size() << " entries, expected " << r
      << " for a tensor of shape " << x.shape();
  std::vector<bool> seen(static_cast<size_t>(r), false);
  Shape out;
  for (int64_t p : perm) {
    EMBER_CHECK(p >= 0 && p < r && !seen[static_cast<size_t>(p)], InvalidArgument)
        << "transpose: perm " << list_str(perm) << " is not a permutation of 0.." << r - 1 << " (input shape "
        << x.shape() << ")";
    seen[static_cast<size_t>(p)] = true;
    out.push_back(x.shape()[p]);
  }
  return run1(OpId::transpose, x, OutputSpec{out, x.dtype()}, TransposeAttrs{std::move(perm)});
}

Tensor expand_dims(const Tensor& x, int64_t axis) {
  int64_t r = x.rank();
  EMBER_CHECK(axis >= -r - 1 && axis <= r, InvalidArgument)
      << "expand_dims: axis " << axis << " is out of range for a tensor of shape " << x.shape() << " (expected "
      << -r - 1 << " <= axis <= " << r << ")";
  if (axis < 0) axis += r + 1;
  std::vector<int64_t> dims(x.shape().begin(), x.shape().end());
  dims.insert(dims.begin() + axis, 1);
  return reshape(x, Shape(std::move(dims)));
}

Tensor squeeze(const Tensor& x, std::vector<int64_t> axes) {
  int64_t r = x.rank();
  std::vector<bool> drop(static_cast<size_t>(r), false);
  for (int64_t a : axes) {
    EMBER_CHECK(a >= -r && a < r, InvalidArgument)
        << "squeeze: axis " << a << " is out of range for a tensor of shape " << x.shape() << " (expected " << -r
        << " <= axis < " << r << ")";
    int64_t n = a < 0 ? a + r : a;
    EMBER_CHECK(x.shape()[n] == 1, InvalidArgument)
        << "squeeze: cannot squeeze axis " << a << " of a tensor of shape " << x.shape()
        << ": expected a dimension of 1, got " << x.shape()[n];
    drop[static_cast<size_t>(n)] = true;
  }
  Shape out;
  for (int64_t d = 0; d < r; ++d) {
    bool remove = axes.empty() ? x.shape()[d] == 1 : drop[static_cast<size_t>(d)];
    if (!remove) out.push_back(x.shape()[d]);
  }
  return reshape(x, out);
}

Tensor concat(const std::vector<Tensor>& xs, int64_t axis) {
  EMBER_CHECK(!xs.empty(), InvalidArgument) << "concat: expected at least one tensor, got none";
  const Tensor& first = xs[0];
  int64_t r = first.rank();
  EMBER_CHECK(r > 0, InvalidArgument) << "concat: cannot concatenate scalars (shape " << first.shape()
                                      << "); use stack instead";
  int64_t a = normalize_axis(axis, r, "concat");
  Shape out = first.shape();
  for (size_t i = 1; i < xs.size(); ++i) {
    const Tensor& t = xs[i];
    EMBER_CHECK(t.dtype() == first.dtype(), InvalidArgument)
        << "concat: all tensors must have one dtype, got " << first.dtype() << " (tensor 0) and " << t.dtype()
        << " (tensor " << i << ")";
    EMBER_CHECK(t.rank() == r, InvalidArgument) << "concat: tensor " << i << " has shape " << t.shape()
                                                << ", whose rank differs from tensor 0's shape " << first.shape();
    for (int64_t d = 0; d < r; ++d) {
      EMBER_CHECK(d == a || t.shape()[d] == first.shape()[d], InvalidArgument)
          << "concat: tensor " << i << " has shape " << t.shape() << ", incompatible with tensor 0's shape "
          << first.shape() << " (all dimensions but axis " << a << " must agree)";
    }
    out[a] += t.shape()[a];
  }
  return run_op(OpId::concat, std::span<const Tensor>(xs), OutputSpec{out, first.dtype()}, AxisAttrs{a});
}

Tensor stack(const std::vector<Tensor>& xs, int64_t axis) {
  EMBER_CHECK(!xs.empty(), InvalidArgument) << "stack: expected at least one tensor, got none";
  int64_t r = xs[0].rank();
  EMBER_CHECK(axis >= -r - 1 && axis <= r, InvalidArgument)
      << "stack: axis " << axis << " is out of range for tensors of shape " << xs[0].shape() << " (expected "
      << -r - 1 << " <= axis <= " << r << ")";
  std::vector<Tensor> parts;
  parts.reserve(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    EMBER_CHECK(xs[i].dtype() == xs[0].dtype(), InvalidArgument)
        << "stack: all tensors must have one dtype, got " << xs[0].dtype() << " (tensor 0) and " << xs[i].dtype()
        << " (tensor " << i << ")";
    EMBER_CHECK(xs[i].shape() == xs[0].shape(), InvalidArgument)
        << "stack: all tensors must have one shape, got " << xs[0].shape() << " (tensor 0) and " << xs[i].shape()
        << " (tensor " << i << ")";
    parts.push_back(expand_dims(xs[i], axis));
  }
  return concat(parts, axis < 0 ? axis + r + 1 : axis);
}

std::vector<Tensor> split(const Tensor& x, int64_t num, int64_t axis) {
  int64_t a = normalize_axis(axis, x.rank(), "split");
  int64_t dim = x.shape()[a];
  EMBER_CHECK(num > 0, InvalidArgument) << "split: num must be positive, got " << num;
  EMBER_CHECK(dim % num == 0, InvalidArgument)
      << "split: dimension " << a << " of shape " << x.shape() << " (size " << dim
      << ") is not divisible by num = " << num;
  return split(x, std::vector<int64_t>(static_cast<size_t>(num), dim / num), a);
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t axis) {
  int64_t a = normalize_axis(axis, x.rank(), "split");
  int64_t dim = x.shape()[a];
  EMBER_CHECK(!sizes.empty(), InvalidArgument) << "split: sizes must not be empty";
  int64_t known = 0, unknown = -1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1) {
      EMBER_CHECK(unknown < 0, InvalidArgument) << "split: at most one size can be -1, got " << list_str(sizes);
      unknown = static_cast<int64_t>(i);
    } else {
      EMBER_CHECK(sizes[i] >= 0, InvalidArgument)
          << "split: sizes " << list_str(sizes) << " hold the negative size " << sizes[i] << " (only -1 is allowed)";
      known += sizes[i];
    }
  }
  std::vector<int64_t> resolved = sizes;
  if (unknown >= 0) {
    EMBER_CHECK(known <= dim, InvalidArgument) << "split: sizes " << list_str(sizes) << " add up to more than "
                                               << dim << ", the size of dimension " << a << " of shape " << x.shape();
    resolved[static_cast<size_t>(unknown)] = dim - known;
  } else {
    EMBER_CHECK(known == dim, InvalidArgument) << "split: sizes " << list_str(sizes) << " add up to " << known
                                               << ", expected " << dim << " (dimension " << a << " of shape "
                                               << x.shape() << ")";
  }
  std::vector<Tensor> out;
  out.reserve(resolved.size());
  int64_t start = 0;
  for (int64_t s : resolved) {
    out.push_back(slice_axis(x, a, start, s));
    start += s;
  }
  return out;
}

Tensor pad(const Tensor& x, const std::vector<std::pair<int64_t, int64_t>>& paddings, PadOptions options) {
  int64_t r = x.rank();
  EMBER_CHECK(static_cast<int64_t>(paddings.size()) == r, InvalidArgument)
      << "pad: expected " << r << " (before, after) pairs for a tensor of shape " << x.shape() << ", got "
      << paddings.size();
  PadMode mode = parse_pad_mode(options.mode);
  // REFLECT does not repeat the edge element, so it has one fewer element to mirror than SYMMETRIC.
  int64_t offset = mode == PadMode::Reflect ? 1 : 0;
  Shape out;
  for (int64_t d = 0; d < r; ++d) {
    auto [before, after] = paddings[static_cast<size_t>(d)];
    int64_t dim = x.shape()[d];
    EMBER_CHECK(before >= 0 && after >= 0, InvalidArgument)
        << "pad: paddings must be non-negative, got (" << before << ", " << after << ") for dimension " << d;
    EMBER_CHECK(mode == PadMode::Constant || (before <= dim - offset && after <= dim - offset), InvalidArgument)
        << "pad: " << options.mode << " paddings (" << before << ", " << after << ") of dimension " << d
        << " must be no greater than " << dim - offset << " for a tensor of shape " << x.shape();
    out.push_back(before + dim + after);
  }
  return run1(OpId::pad, x, OutputSpec{out, x.dtype()}, PadAttrs{paddings, mode, options.constant_values});
}

Tensor tile(const Tensor& x, const std::vector<int64_t>& multiples) {
  int64_t r = x.rank();
  EMBER_CHECK(static_cast<int64_t>(multiples.size()) == r, InvalidArgument)
      << "tile: multiples " << list_str(multiples) << " must have " << r << " entries for a tensor of shape "
      << x.shape();
  Shape out;
  for (int64_t d = 0; d < r; ++d) {
    int64_t m = multiples[static_cast<size_t>(d)];
    EMBER_CHECK(m >= 0, InvalidArgument) << "tile: multiples " << list_str(multiples)
                                         << " must be non-negative";
    out.push_back(x.shape()[d] * m);
  }
  return run1(OpId::tile, x, OutputSpec{out, x.dtype()}, TileAttrs{multiples});
}

Tensor broadcast_to(const Tensor& x, const Shape& shape) {
  for (int64_t d : shape) {
    EMBER_CHECK(d >= 0, InvalidArgument) << "broadcast_to: target shape " << shape
                                         << " has a negative dimension (input shape " << x.shape() << ")";
  }
  Shape b = broadcast_shapes("broadcast_to", x.shape(), shape);
  EMBER_CHECK(b == shape, InvalidArgument) << "broadcast_to: cannot broadcast a tensor of shape " << x.shape()
                                           << " to shape " << shape;
  return run1(OpId::broadcast_to, x, OutputSpec{shape, x.dtype()}, ShapeAttrs{shape});
}

}  // namespace ember::ops
