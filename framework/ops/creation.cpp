// Front ends of the creation ops: validation, dtype inference and output sizes for fill, range and
// linspace; eye is a composite of range, reshape, equal and cast.
#include "framework/ops/creation.h"

#include <cmath>
#include <limits>

#include "framework/ops/array.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/elementwise.h"

namespace ember::ops {

namespace {

void check_shape(const char* op, const Shape& shape) {
  for (int64_t d : shape)
    EMBER_CHECK(d >= 0, InvalidArgument) << op << ": shape " << shape << " has a negative dimension " << d
                                         << " (dimensions must be >= 0)";
}

// Whether `value` (already whole) fits integer dtype t.
bool fits(double value, DType t) {
  switch (t) {
    case DType::Int32: return value >= -2147483648.0 && value <= 2147483647.0;
    case DType::Int64: return value >= -9223372036854775808.0 && value < 9223372036854775808.0;
    case DType::UInt8: return value >= 0 && value <= 255;
    default: return true;
  }
}

Tensor fill(const char* op, const Shape& shape, DType dtype, double value, Device device) {
  check_shape(op, shape);
  if (is_integer(dtype)) {
    EMBER_CHECK(std::isfinite(value) && fits(std::trunc(value), dtype), InvalidArgument)
        << op << ": value " << value << " cannot be represented in dtype " << dtype;
  }
  return run_op(OpId::fill, {}, OutputSpec{shape, dtype}, CreationAttrs{shape, dtype, value, 0, 0}, device);
}

bool is_whole(double v) { return std::isfinite(v) && std::trunc(v) == v; }

// The element count of range(start, limit, delta) with TF's formula, evaluated in the output dtype
// (the arguments are first rounded to it, as TF converts them to tensors of that dtype).
template <class T>
int64_t range_size(double start, double limit, double delta) {
  if constexpr (std::is_integral_v<T>) {
    const int64_t s = static_cast<int64_t>(start), l = static_cast<int64_t>(limit), d = static_cast<int64_t>(delta);
    // |l - s| fits: both lie in the dtype's range, and the sum below stays under 2^64 for int64.
    const uint64_t span = l >= s ? static_cast<uint64_t>(l) - static_cast<uint64_t>(s)
                                 : static_cast<uint64_t>(s) - static_cast<uint64_t>(l);
    const uint64_t step = d >= 0 ? static_cast<uint64_t>(d) : uint64_t{0} - static_cast<uint64_t>(d);
    return static_cast<int64_t>(span / step + (span % step != 0 ? 1 : 0));
  } else {
    const T s = static_cast<T>(start), l = static_cast<T>(limit), d = static_cast<T>(delta);
    EMBER_CHECK(d != T(0), InvalidArgument)
        << "range: delta must not be 0 (delta " << delta << " rounds to 0 in dtype " << dtype_v<T> << ")";
    const T q = static_cast<T>((l - s) / d);
    const double n = std::ceil(std::abs(static_cast<double>(q)));
    EMBER_CHECK(n < 4.0e18, InvalidArgument)
        << "range: start " << start << ", limit " << limit << " and delta " << delta << " would give " << n
        << " elements (too many)";
    return static_cast<int64_t>(n);
  }
}

}  // namespace

Tensor zeros(const Shape& shape, DType dtype) { return fill("zeros", shape, dtype, 0, default_device()); }

Tensor ones(const Shape& shape, DType dtype) { return fill("ones", shape, dtype, 1, default_device()); }

Tensor full(const Shape& shape, double value, DType dtype) {
  return fill("full", shape, dtype, value, default_device());
}

Tensor zeros_like(const Tensor& x) {
  EMBER_CHECK(x.defined(), InvalidArgument) << "zeros_like: the input tensor is undefined";
  return fill("zeros_like", x.shape(), x.dtype(), 0, x.device());
}

Tensor ones_like(const Tensor& x) {
  EMBER_CHECK(x.defined(), InvalidArgument) << "ones_like: the input tensor is undefined";
  return fill("ones_like", x.shape(), x.dtype(), 1, x.device());
}

Tensor range(double start, double limit, double delta, std::optional<DType> dtype) {
  EMBER_CHECK(std::isfinite(start) && std::isfinite(limit) && std::isfinite(delta), InvalidArgument)
      << "range: start, limit and delta must be finite, got " << start << ", " << limit << ", " << delta;
  EMBER_CHECK(delta != 0, InvalidArgument) << "range: delta must not be 0";
  EMBER_CHECK(delta > 0 ? start <= limit : start >= limit, InvalidArgument)
      << "range: requires start " << (delta > 0 ? "<=" : ">=") << " limit when delta " << (delta > 0 ? ">" : "<")
      << " 0, got start " << start << ", limit " << limit << ", delta " << delta;
  DType t;
  if (dtype) {
    t = *dtype;
  } else if (is_whole(start) && is_whole(limit) && is_whole(delta)) {
    // Python ints become int32 in TF unless they need 64 bits.
    const bool small = fits(start, DType::Int32) && fits(limit, DType::Int32) && fits(delta, DType::Int32);
    t = small ? DType::Int32 : DType::Int64;
  } else {
    t = DType::Float32;
  }
  int64_t size = 0;
  switch (t) {
    case DType::Int32:
    case DType::Int64:
      for (double v : {start, limit, delta})
        EMBER_CHECK(is_whole(v) && fits(v, t), InvalidArgument)
            << "range: " << v << " is not a whole number that fits dtype " << t << " (start " << start << ", limit "
            << limit << ", delta " << delta << ")";
      size = range_size<int64_t>(start, limit, delta);
      break;
    case DType::Float32: size = range_size<float>(start, limit, delta); break;
    case DType::Float64: size = range_size<double>(start, limit, delta); break;
    case DType::Float16: size = range_size<half>(start, limit, delta); break;
    case DType::BFloat16: size = range_size<bfloat16>(start, limit, delta); break;
    default:
      throw make_error<InvalidArgument>("range: dtype ", t,
                                        " is not supported (expected int32, int64, float32, float64, float16 or "
                                        "bfloat16)");
  }
  const Shape shape{size};
  return run_op(OpId::range, {}, OutputSpec{shape, t}, CreationAttrs{shape, t, start, limit, delta});
}

Tensor range(double limit) { return range(0, limit, 1, std::nullopt); }

Tensor eye(int64_t num_rows, int64_t num_columns, DType dtype) {
  EMBER_CHECK(num_rows >= 0, InvalidArgument) << "eye: num_rows must be >= 0, got " << num_rows;
  const int64_t cols = num_columns < 0 ? num_rows : num_columns;
  Tensor r = reshape(range(0, static_cast<double>(num_rows), 1, DType::Int64), Shape{num_rows, 1});
  Tensor c = reshape(range(0, static_cast<double>(cols), 1, DType::Int64), Shape{1, cols});
  Tensor diag = equal(r, c);
  return dtype == DType::Bool ? diag : cast(diag, dtype);
}

Tensor linspace(double start, double stop, int64_t num, DType dtype) {
  EMBER_CHECK(is_floating(dtype), InvalidArgument)
      << "linspace: dtype " << dtype << " is not supported (expected a floating dtype)";
  EMBER_CHECK(num >= 1, InvalidArgument) << "linspace: num must be >= 1, got " << num;
  EMBER_CHECK(std::isfinite(start) && std::isfinite(stop), InvalidArgument)
      << "linspace: start and stop must be finite, got " << start << " and " << stop;
  const Shape shape{num};
  return run_op(OpId::linspace, {}, OutputSpec{shape, dtype}, CreationAttrs{shape, dtype, start, stop, 0});
}

}  // namespace ember::ops
