// CPU kernels of the indexing ops: gather, unsorted_segment_sum, one_hot, pad. Indices were range-checked
// by the front ends, so the loops here never throw.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "framework/core/parallel.h"
#include "framework/ops/cpu/array_copy.h"
#include "framework/ops/dispatch.h"

namespace ember {

namespace {

using cpu::by_size;

int64_t prod(const Shape& s, int64_t from, int64_t to) {
  int64_t p = 1;
  for (int64_t d = from; d < to; ++d) p *= s[d];
  return p;
}

// Runs body with `index_t` the C++ type of an index tensor's dtype (Int32, Int64 or UInt8).
template <class F>
void by_index_type(DType t, F&& body) {
  if (t == DType::Int32) body(int32_t{});
  else if (t == DType::Int64) body(int64_t{});
  else body(uint8_t{});
}

// The value converted to dtype, as raw bits of its element size.
uint64_t value_bits(double v, DType dtype) {
  uint64_t bits = 0;
  EMBER_DISPATCH_ALL(dtype, "array", {
    scalar_t c = static_cast<scalar_t>(v);
    std::memcpy(&bits, &c, sizeof(scalar_t));
  });
  return bits;
}

// Writes n copies of the element whose bits are `bits` at dst.
void fill_bits(void* dst, int64_t n, uint64_t bits, size_t esize) {
  by_size(esize, [&](auto tag) {
    using E = decltype(tag);
    E v;
    std::memcpy(&v, &bits, sizeof(E));
    std::fill_n(static_cast<E*>(dst), n, v);
  });
}

void gather_cpu(const KernelContext& ctx) {
  const Tensor& params = ctx.inputs[0];
  const Tensor& indices = ctx.inputs[1];
  Tensor& y = ctx.outputs[0];
  const auto& a = std::get<GatherAttrs>(ctx.attrs);
  if (y.num_elements() == 0) return;
  const Shape& ps = params.shape();
  const int64_t batch = prod(ps, 0, a.batch_dims), outer = prod(ps, a.batch_dims, a.axis), n = ps[a.axis];
  const int64_t inner = prod(ps, a.axis + 1, ps.rank());
  const int64_t k = prod(indices.shape(), a.batch_dims, indices.rank());
  const size_t es = dtype_size(params.dtype()), row_bytes = static_cast<size_t>(inner) * es;
  const char* src = static_cast<const char*>(params.raw_data());
  char* dst = static_cast<char*>(y.raw_data());
  by_index_type(indices.dtype(), [&](auto tag) {
    using index_t = decltype(tag);
    const index_t* idx = static_cast<const index_t*>(indices.raw_data());
    // Output rows run over (batch, outer, k); each copies one params row of `inner` elements.
    parallel_for(batch * outer * k, grain_for(inner),
                 [&](int64_t b, int64_t e) {
                   for (int64_t row = b; row < e; ++row) {
                     int64_t ki = row % k, bo = row / k, bi = bo / outer;
                     int64_t pick = static_cast<int64_t>(idx[bi * k + ki]);
                     copy_host_elements(dst + static_cast<size_t>(row) * row_bytes,
                                        src + static_cast<size_t>(bo * n + pick) * row_bytes, static_cast<size_t>(inner),
                                        params.dtype());
                   }
                 });
  });
}

void unsorted_segment_sum_cpu(const KernelContext& ctx) {
  const Tensor& data = ctx.inputs[0];
  const Tensor& ids = ctx.inputs[1];
  Tensor& y = ctx.outputs[0];
  const int64_t segments = std::get<SegmentAttrs>(ctx.attrs).num_segments;
  const int64_t rows = ids.num_elements(), inner = prod(data.shape(), ids.rank(), data.rank());
  const int64_t work = std::max<int64_t>(rows * inner, 1);
  EMBER_DISPATCH_NUMERIC(data.dtype(), "unsorted_segment_sum", {
    using acc_t = compute_t<scalar_t>;
    const scalar_t* in = static_cast<const scalar_t*>(data.raw_data());
    scalar_t* out = static_cast<scalar_t*>(y.raw_data());
    // Half types accumulate in a float buffer and round once; the others accumulate in place.
    constexpr bool in_place = std::is_same_v<acc_t, scalar_t>;
    const size_t count = static_cast<size_t>(segments * inner);
    std::vector<acc_t> buffer(in_place ? 0 : count);
    acc_t* acc = in_place ? reinterpret_cast<acc_t*>(out) : buffer.data();
    std::fill_n(acc, count, acc_t(0));
    by_index_type(ids.dtype(), [&](auto tag) {
      using index_t = decltype(tag);
      const index_t* id = static_cast<const index_t*>(ids.raw_data());
      // Threads own disjoint output ranges (columns when rows are wide, else segments), so no atomics.
      if (inner >= segments) {
        parallel_for(inner, std::max<int64_t>(1, kParallelGrain * inner / work), [&](int64_t b, int64_t e) {
          for (int64_t r = 0; r < rows; ++r) {
            acc_t* o = acc + static_cast<int64_t>(id[r]) * inner;
            const scalar_t* x = in + r * inner;
            for (int64_t c = b; c < e; ++c) o[c] += static_cast<acc_t>(x[c]);
          }
        });
      } else {
        parallel_for(segments, std::max<int64_t>(1, kParallelGrain * segments / work), [&](int64_t b, int64_t e) {
          for (int64_t r = 0; r < rows; ++r) {
            int64_t s = static_cast<int64_t>(id[r]);
            if (s < b || s >= e) continue;
            acc_t* o = acc + s * inner;
            const scalar_t* x = in + r * inner;
            for (int64_t c = 0; c < inner; ++c) o[c] += static_cast<acc_t>(x[c]);
          }
        });
      }
    });
    if constexpr (!in_place)
      for (size_t i = 0; i < count; ++i) out[i] = static_cast<scalar_t>(acc[i]);
  });
}

void one_hot_cpu(const KernelContext& ctx) {
  const Tensor& indices = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const auto& a = std::get<OneHotAttrs>(ctx.attrs);
  if (y.num_elements() == 0) return;
  const size_t es = dtype_size(y.dtype());
  const uint64_t on = value_bits(a.on_value, y.dtype()), off = value_bits(a.off_value, y.dtype());
  const int64_t outer = prod(indices.shape(), 0, a.axis), inner = prod(indices.shape(), a.axis, indices.rank());
  const int64_t depth = a.depth;
  char* out = static_cast<char*>(y.raw_data());
  by_index_type(indices.dtype(), [&](auto tag) {
    using index_t = decltype(tag);
    const index_t* idx = static_cast<const index_t*>(indices.raw_data());
    // Output viewed as (outer, depth, inner); one task per outer row.
    parallel_for(outer, grain_for(depth * inner), [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        char* row = out + static_cast<size_t>(o * depth * inner) * es;
        fill_bits(row, depth * inner, off, es);
        for (int64_t i = 0; i < inner; ++i) {
          int64_t v = static_cast<int64_t>(idx[o * inner + i]);
          if (v >= 0 && v < depth) std::memcpy(row + static_cast<size_t>(v * inner + i) * es, &on, es);
        }
      }
    });
  });
}

// The input index each output index along one dimension reads, or -1 for a constant.
std::vector<int64_t> pad_source(int64_t dim, int64_t before, int64_t after, PadMode mode) {
  std::vector<int64_t> src(static_cast<size_t>(before + dim + after));
  for (int64_t o = 0; o < static_cast<int64_t>(src.size()); ++o) {
    int64_t i = o - before;
    if (i < 0) i = mode == PadMode::Constant ? -1 : mode == PadMode::Reflect ? -i : -i - 1;
    else if (i >= dim) i = mode == PadMode::Constant ? -1 : mode == PadMode::Reflect ? 2 * (dim - 1) - i : 2 * dim - 1 - i;
    src[static_cast<size_t>(o)] = i;
  }
  return src;
}

// Trailing unpadded dims are copied as one block ("unit"); the padded dims before them map each output
// index to a source index, and the last padded dim is precomputed as runs of copies and fills.
void pad_cpu(const KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const auto& a = std::get<PadAttrs>(ctx.attrs);
  if (y.num_elements() == 0) return;
  const size_t es = dtype_size(x.dtype());
  const int64_t r = x.rank();
  int64_t last = -1;
  for (int64_t d = 0; d < r; ++d) {
    if (a.paddings[static_cast<size_t>(d)].first || a.paddings[static_cast<size_t>(d)].second) last = d;
  }
  if (last < 0) {
    cpu::copy_bytes(static_cast<char*>(y.raw_data()), static_cast<const char*>(x.raw_data()), x.nbytes());
    return;
  }
  const int64_t unit = prod(x.shape(), last + 1, r);
  const size_t unit_bytes = static_cast<size_t>(unit) * es;
  const uint64_t cbits = value_bits(a.constant_value, x.dtype());
  std::vector<std::vector<int64_t>> src(static_cast<size_t>(last + 1));
  std::vector<int64_t> in_stride(static_cast<size_t>(last + 1));  // in units
  int64_t acc = 1;
  for (int64_t d = last; d >= 0; --d) {
    auto [b, e] = a.paddings[static_cast<size_t>(d)];
    src[static_cast<size_t>(d)] = pad_source(x.shape()[d], b, e, a.mode);
    in_stride[static_cast<size_t>(d)] = acc;
    acc *= x.shape()[d];
  }
  struct Run {
    int64_t out, src, len;  // src -1: fill
  };
  std::vector<Run> runs;
  for (int64_t o = 0; o < y.shape()[last]; ++o) {
    int64_t s = src[static_cast<size_t>(last)][static_cast<size_t>(o)];
    if (!runs.empty()) {
      Run& p = runs.back();
      if ((s < 0 && p.src < 0) || (s >= 0 && p.src >= 0 && s == p.src + p.len)) {
        ++p.len;
        continue;
      }
    }
    runs.push_back({o, s, 1});
  }
  const int64_t row_units = y.shape()[last], rows = y.num_elements() / (row_units * unit);
  const char* in = static_cast<const char*>(x.raw_data());
  char* out = static_cast<char*>(y.raw_data());
  parallel_for(rows, grain_for(row_units * unit), [&](int64_t b, int64_t e) {
    for (int64_t row = b; row < e; ++row) {
      char* orow = out + static_cast<size_t>(row * row_units) * unit_bytes;
      int64_t off = 0, rem = row;
      bool constant = false;
      for (int64_t d = last - 1; d >= 0; --d) {
        int64_t od = rem % y.shape()[d];
        rem /= y.shape()[d];
        int64_t s = src[static_cast<size_t>(d)][static_cast<size_t>(od)];
        if (s < 0) constant = true;
        off += s * in_stride[static_cast<size_t>(d)];
      }
      if (constant) {
        fill_bits(orow, row_units * unit, cbits, es);
        continue;
      }
      for (const Run& run : runs) {
        char* o = orow + static_cast<size_t>(run.out) * unit_bytes;
        if (run.src < 0) fill_bits(o, run.len * unit, cbits, es);
        else std::memcpy(o, in + static_cast<size_t>(off + run.src) * unit_bytes, static_cast<size_t>(run.len) * unit_bytes);
      }
    }
  });
}

}  // namespace

EMBER_REGISTER_KERNEL(gather, CPU, gather_cpu, EMBER_ALL_DTYPES, DType::String);
EMBER_REGISTER_KERNEL(unsorted_segment_sum, CPU, unsorted_segment_sum_cpu, DType::Float32, DType::Float64,
                      DType::Float16, DType::BFloat16, DType::Int32, DType::Int64, DType::UInt8);
EMBER_REGISTER_KERNEL(one_hot, CPU, one_hot_cpu, DType::Int32, DType::Int64, DType::UInt8);
EMBER_REGISTER_KERNEL(pad, CPU, pad_cpu, EMBER_ALL_DTYPES);

}  // namespace ember
