// Front ends of the indexing ops (strided_slice, slice, gather, unsorted_segment_sum, one_hot);
// kernels live in cpu/array.cpp and cpu/indexing.cpp.
#include <array>
#include <bit>
#include <span>
#include <sstream>

#include "framework/ops/array.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/index_checks.h"

namespace ember::ops {

namespace {

std::string index_list_str(const std::vector<int64_t>& v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  return os.str() + "]";
}

// "[1, 0]" for flat position 2 of shape (2, 2).
std::string position_str(int64_t flat, const Shape& shape) {
  std::vector<int64_t> idx(static_cast<size_t>(shape.rank()));
  for (int64_t d = shape.rank() - 1; d >= 0; --d) {
    int64_t n = shape[d] ? shape[d] : 1;
    idx[static_cast<size_t>(d)] = flat % n;
    flat /= n;
  }
  return index_list_str(idx);
}

}  // namespace

namespace detail {

void check_index_dtype(const char* op, const char* what, const Tensor& t, bool allow_uint8) {
  DType d = t.dtype();
  EMBER_CHECK(d == DType::Int32 || d == DType::Int64 || (allow_uint8 && d == DType::UInt8), InvalidArgument)
      << op << ": " << what << " must be int32" << (allow_uint8 ? ", int64 or uint8" : " or int64") << ", got "
      << d;
}

namespace {
std::array<DeviceIndexCheck, kNumDeviceTypes>& device_index_checks() {
  static std::array<DeviceIndexCheck, kNumDeviceTypes> checks{};
  return checks;
}
}  // namespace

void register_device_index_check(DeviceType type, DeviceIndexCheck check) {
  device_index_checks()[static_cast<size_t>(type)] = check;
}

void check_indices_in_range(const char* op, const char* what, const Tensor& indices, int64_t limit) {
  if (indices.num_elements() == 0) return;
  if (DeviceIndexCheck on_device = device_index_checks()[static_cast<size_t>(indices.device().type())]) {
    on_device(op, what, indices, limit);
    return;
  }
  Tensor h = indices.to(Device::cpu());
  int64_t n = h.num_elements();
  auto check = [&](auto* p) {
    for (int64_t i = 0; i < n; ++i) {
      int64_t v = static_cast<int64_t>(p[i]);
      EMBER_CHECK(v >= 0 && v < limit, InvalidArgument)
          << op << ": " << what << position_str(i, h.shape()) << " = " << v << " is not in [0, " << limit << ")";
    }
  };
  if (h.dtype() == DType::Int32) check(static_cast<const int32_t*>(h.raw_data()));
  else check(static_cast<const int64_t*>(h.raw_data()));
}

void check_indices_of(OpId op, std::span<const Tensor> inputs, const Attrs& attrs) {
  switch (op) {
    case OpId::gather: {
      const auto& a = std::get<GatherAttrs>(attrs);
      check_indices_in_range("gather", "indices", inputs[1], inputs[0].shape()[a.axis]);
      break;
    }
    case OpId::unsorted_segment_sum:
      check_indices_in_range("unsorted_segment_sum", "segment_ids", inputs[1],
                             std::get<SegmentAttrs>(attrs).num_segments);
      break;
    case OpId::sparse_softmax_cross_entropy_with_logits: {
      const Shape& logits = inputs[0].shape();
      check_indices_in_range("sparse_softmax_cross_entropy_with_logits", "labels", inputs[1],
                             logits[logits.rank() - 1]);
      break;
    }
    default:
      break;
  }
}

}  // namespace detail

using detail::check_index_dtype;
using detail::check_indices_in_range;

namespace {

constexpr int kShrinkAxis = -1, kNewAxis = -2;

}  // namespace

// Follows TF's ValidateStridedSliceOp: the sparse spec (with ellipsis and new axes) is expanded into
// one dense entry per input dimension, then each is canonicalised and clamped.
Tensor strided_slice(const Tensor& x, const std::vector<int64_t>& begin, const std::vector<int64_t>& end,
                     const std::vector<int64_t>& strides_in, StridedSliceOptions o) {
  const int64_t n = static_cast<int64_t>(begin.size());
  std::vector<int64_t> strides = strides_in.empty() ? std::vector<int64_t>(begin.size(), 1) : strides_in;
  EMBER_CHECK(end.size() == begin.size() && strides.size() == begin.size(), InvalidArgument)
      << "strided_slice: begin, end and strides must have equal lengths, got " << begin.size() << ", "
      << end.size() << " and " << strides.size();
  EMBER_CHECK(n < 63, InvalidArgument) << "strided_slice: at most 62 slice entries are supported, got " << n;
  const uint64_t ellipsis = static_cast<uint64_t>(o.ellipsis_mask) & ((uint64_t{1} << n) - 1);
  EMBER_CHECK(std::popcount(ellipsis) <= 1, InvalidArgument)
      << "strided_slice: at most one ellipsis is allowed, got ellipsis_mask " << o.ellipsis_mask;
  auto bit = [](int64_t mask, int64_t i) { return ((static_cast<uint64_t>(mask) >> i) & 1) != 0; };

  int64_t sparse_dims = n, new_axes_after_ellipsis = 0;
  bool ellipsis_seen = false;
  for (int64_t i = 0; i < n; ++i) {
    if (ellipsis_seen && bit(o.new_axis_mask, i) && !bit(o.ellipsis_mask, i)) ++new_axes_after_ellipsis;
    if (bit(o.ellipsis_mask, i)) ellipsis_seen = true;
  }
  uint64_t ellipsis_bits = ellipsis;
  if (!ellipsis_seen) ellipsis_bits |= uint64_t{1} << sparse_dims++;  // an implicit trailing ellipsis

  const int64_t r = x.rank();
  const size_t ur = static_cast<size_t>(r);
  std::vector<int64_t> dbegin(ur, 0), dend(ur, 0), dstride(ur, 1);
  std::vector<bool> bmask(ur, false), emask(ur, false), shrink(ur, false);
  std::vector<int64_t> gather_dims;  // per final dim: a dense index, kNewAxis or kShrinkAxis
  int64_t full = 0;
  for (int64_t i = 0; i < sparse_dims; ++i) {
    if ((ellipsis_bits >> i) & 1) {
      int64_t next = std::min(r - (sparse_dims - i) + 1 + new_axes_after_ellipsis, r);
      for (; full < next; ++full) {
        bmask[static_cast<size_t>(full)] = emask[static_cast<size_t>(full)] = true;
        gather_dims.push_back(full);
      }
    } else if (bit(o.new_axis_mask, i)) {
      gather_dims.push_back(kNewAxis);
    } else {
      EMBER_CHECK(full < r, InvalidArgument)
          << "strided_slice: too many indices for a tensor of shape " << x.shape() << " (begin "
          << index_list_str(begin) << ")";
      size_t f = static_cast<size_t>(full), si = static_cast<size_t>(i);
      dbegin[f] = begin[si];
      dend[f] = end[si];
      dstride[f] = strides[si];
      bmask[f] = bit(o.begin_mask, i);
      emask[f] = bit(o.end_mask, i);
      shrink[f] = bit(o.shrink_axis_mask, i);
      gather_dims.push_back(shrink[f] ? kShrinkAxis : full);
      ++full;
    }
  }

  Shape processing;
  bool identity = true;
  for (size_t d = 0; d < ur; ++d) {
    int64_t dim = x.shape()[static_cast<int64_t>(d)], s = dstride[d];
    EMBER_CHECK(s != 0, InvalidArgument) << "strided_slice: strides " << index_list_str(strides)
                                         << " hold a zero stride (for dimension " << d << ")";
    if (shrink[d]) {
      EMBER_CHECK(s > 0, InvalidArgument) << "strided_slice: a shrunk index (dimension " << d
                                          << ") needs a positive stride, got " << s;
      int64_t fwd = dbegin[d] < 0 ? dim + dbegin[d] : dbegin[d];
      EMBER_CHECK(fwd >= 0 && fwd < dim, InvalidArgument)
          << "strided_slice: index " << dbegin[d] << " is out of bounds for dimension " << d << " of shape "
          << x.shape() << " (size " << dim << ")";
      dbegin[d] = fwd;
      dend[d] = fwd + 1;
    } else {
      // Clamp to [0, dim] going forward and [-1, dim - 1] going backward (-1 meaning before the start).
      const int64_t lo = s > 0 ? 0 : -1, hi = s > 0 ? dim : dim - 1;
      auto canonical = [&](int64_t v, bool masked, bool is_end) {
        if (masked) return (s > 0) != is_end ? lo : hi;
        int64_t fwd = v < 0 ? dim + v : v;
        return std::clamp(fwd, lo, hi);
      };
      dbegin[d] = canonical(dbegin[d], bmask[d], false);
      dend[d] = canonical(dend[d], emask[d], true);
    }
    int64_t interval = dend[d] - dbegin[d];
    int64_t size = (interval == 0 || (interval < 0) != (s < 0)) ? 0 : interval / s + (interval % s != 0 ? 1 : 0);
    processing.push_back(size);
    identity = identity && s == 1 && size == dim;
  }
  Shape final_shape;
  for (int64_t g : gather_dims) {
    if (g >= 0) final_shape.push_back(processing[g]);
    else if (g == kNewAxis) final_shape.push_back(1);
  }

  Tensor out = identity ? x
                        : run_op(OpId::strided_slice, std::span<const Tensor>(&x, 1),
                                 OutputSpec{processing, x.dtype()}, StridedSliceAttrs{dbegin, dstride, processing});
  return final_shape == out.shape() ? out : reshape(out, final_shape);
}

Tensor slice(const Tensor& x, const std::vector<int64_t>& begin, const std::vector<int64_t>& size) {
  int64_t r = x.rank();
  EMBER_CHECK(static_cast<int64_t>(begin.size()) == r && static_cast<int64_t>(size.size()) == r, InvalidArgument)
      << "slice: begin " << index_list_str(begin) << " and size " << index_list_str(size) << " must each have " << r
      << " entries for a tensor of shape " << x.shape();
  std::vector<int64_t> end(static_cast<size_t>(r));
  for (size_t d = 0; d < static_cast<size_t>(r); ++d) {
    int64_t dim = x.shape()[static_cast<int64_t>(d)], b = begin[d];
    int64_t s = size[d] == -1 ? dim - b : size[d];
    EMBER_CHECK(b >= 0 && b <= dim && s >= 0 && b + s <= dim, InvalidArgument)
        << "slice: begin " << index_list_str(begin) << " and size " << index_list_str(size)
        << " are out of range for a tensor of shape " << x.shape() << " (dimension " << d << ": expected 0 <= "
        << "begin <= " << dim << " and 0 <= begin + size <= " << dim << ")";
    end[d] = b + s;
  }
  return strided_slice(x, begin, end);
}

Tensor gather(const Tensor& params, const Tensor& indices, GatherOptions options) {
  check_index_dtype("gather", "indices", indices);
  EMBER_CHECK(params.rank() >= 1, InvalidArgument) << "gather: params must be at least 1-D, got shape "
                                                   << params.shape();
  int64_t batch_dims = options.batch_dims;
  if (batch_dims < 0) batch_dims += indices.rank();
  EMBER_CHECK(batch_dims >= 0 && batch_dims <= indices.rank(), InvalidArgument)
      << "gather: batch_dims " << options.batch_dims << " is out of range for indices of shape " << indices.shape();
  int64_t axis = normalize_axis(options.axis, params.rank(), "gather");
  EMBER_CHECK(batch_dims <= axis, InvalidArgument)
      << "gather: batch_dims (" << batch_dims << ") must be less than or equal to axis (" << axis << ")";
  for (int64_t d = 0; d < batch_dims; ++d) {
    EMBER_CHECK(params.shape()[d] == indices.shape()[d], InvalidArgument)
        << "gather: the first " << batch_dims << " dimensions of params " << params.shape() << " and indices "
        << indices.shape() << " must be equal (batch_dims)";
  }
  check_indices_in_range("gather", "indices", indices, params.shape()[axis]);
  Shape out;
  for (int64_t d = 0; d < axis; ++d) out.push_back(params.shape()[d]);
  for (int64_t d = batch_dims; d < indices.rank(); ++d) out.push_back(indices.shape()[d]);
  for (int64_t d = axis + 1; d < params.rank(); ++d) out.push_back(params.shape()[d]);
  std::array<Tensor, 2> in{params, indices};
  return run_op(OpId::gather, std::span<const Tensor>(in), OutputSpec{out, params.dtype()},
                GatherAttrs{axis, batch_dims});
}

Tensor unsorted_segment_sum(const Tensor& data, const Tensor& segment_ids, int64_t num_segments) {
  EMBER_CHECK(data.dtype() != DType::Bool, InvalidArgument)
      << "unsorted_segment_sum: data must be numeric, got dtype " << data.dtype();
  check_index_dtype("unsorted_segment_sum", "segment_ids", segment_ids);
  EMBER_CHECK(num_segments >= 0, InvalidArgument)
      << "unsorted_segment_sum: num_segments must be non-negative, got " << num_segments;
  bool prefix = segment_ids.rank() <= data.rank();
  for (int64_t d = 0; prefix && d < segment_ids.rank(); ++d) prefix = segment_ids.shape()[d] == data.shape()[d];
  EMBER_CHECK(prefix, InvalidArgument) << "unsorted_segment_sum: segment_ids shape " << segment_ids.shape()
                                       << " must be a prefix of data shape " << data.shape();
  check_indices_in_range("unsorted_segment_sum", "segment_ids", segment_ids, num_segments);
  Shape out{num_segments};
  for (int64_t d = segment_ids.rank(); d < data.rank(); ++d) out.push_back(data.shape()[d]);
  std::array<Tensor, 2> in{data, segment_ids};
  return run_op(OpId::unsorted_segment_sum, std::span<const Tensor>(in), OutputSpec{out, data.dtype()},
                SegmentAttrs{num_segments});
}

Tensor one_hot(const Tensor& indices, int64_t depth, OneHotOptions options) {
  check_index_dtype("one_hot", "indices", indices, /*allow_uint8=*/true);
  EMBER_CHECK(depth >= 0, InvalidArgument) << "one_hot: depth must be non-negative, got " << depth;
  int64_t r = indices.rank();
  EMBER_CHECK(options.axis == -1 || (options.axis >= 0 && options.axis <= r), InvalidArgument)
      << "one_hot: axis " << options.axis << " must be -1 or in [0, " << r << "] for indices of shape "
      << indices.shape();
  int64_t axis = options.axis == -1 ? r : options.axis;
  std::vector<int64_t> dims(indices.shape().begin(), indices.shape().end());
  dims.insert(dims.begin() + axis, depth);
  return run_op(OpId::one_hot, std::span<const Tensor>(&indices, 1), OutputSpec{Shape(dims), options.dtype},
                OneHotAttrs{depth, axis, options.on_value, options.off_value, options.dtype});
}

}  // namespace ember::ops
