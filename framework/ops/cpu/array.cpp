// CPU kernels of the shape ops. They move raw elements by size, so one code path serves every fixed-size
// dtype; string elements (std::string objects) are assigned instead.
#include <algorithm>
#include <cstring>
#include <string>

#include "framework/core/parallel.h"
#include "framework/ops/broadcast.h"
#include "framework/ops/cpu/array_copy.h"
#include "framework/ops/dispatch.h"

namespace ember {
namespace cpu {

void copy_bytes(char* dst, const char* src, size_t n) {
  parallel_for(static_cast<int64_t>(n), kParallelGrain * 4, [&](int64_t b, int64_t e) {
    std::memcpy(dst + b, src + b, static_cast<size_t>(e - b));
  });
}

namespace {
// strided_copy for strings: each element assigned, in one thread (string tensors are small host data).
void strided_copy_strings(const std::string* src, std::string* dst, const std::vector<int64_t>& shape,
                          const std::vector<int64_t>& strides, int64_t total) {
  std::vector<int64_t> idx(shape.size(), 0);
  int64_t off = 0;
  for (int64_t i = 0; i < total; ++i) {
    dst[i] = src[off];
    for (size_t d = shape.size(); d-- > 0;) {  // odometer, last dimension fastest
      off += strides[d];
      if (++idx[d] < shape[d]) break;
      off -= strides[d] * shape[d];
      idx[d] = 0;
    }
  }
}
}  // namespace

// Unit dims are dropped and dims that stay adjacent in src are merged, so the inner loop runs as long
// as possible and contiguous runs become memcpy.
void strided_copy(const void* src_v, void* dst_v, DType dtype, const std::vector<int64_t>& shape_in,
                  const std::vector<int64_t>& strides_in) {
  const size_t esize = dtype_size(dtype);
  std::vector<int64_t> shape, strides;
  int64_t total = 1;
  for (size_t d = 0; d < shape_in.size(); ++d) {
    total *= shape_in[d];
    if (shape_in[d] == 1) continue;
    if (!shape.empty() && strides.back() == strides_in[d] * shape_in[d]) {
      shape.back() *= shape_in[d];
      strides.back() = strides_in[d];
    } else {
      shape.push_back(shape_in[d]);
      strides.push_back(strides_in[d]);
    }
  }
  if (total == 0) return;
  if (dtype == DType::String)
    return strided_copy_strings(static_cast<const std::string*>(src_v), static_cast<std::string*>(dst_v), shape, strides,
                                total);
  const char* src = static_cast<const char*>(src_v);
  char* dst = static_cast<char*>(dst_v);
  if (shape.empty()) {
    std::memcpy(dst, src, esize);
    return;
  }
  const int64_t inner = shape.back(), inner_stride = strides.back();
  if (shape.size() == 1 && inner_stride == 1) {
    copy_bytes(dst, src, static_cast<size_t>(inner) * esize);
    return;
  }
  const int64_t outer = total / inner, outer_rank = static_cast<int64_t>(shape.size()) - 1;
  by_size(esize, [&](auto tag) {
    using E = decltype(tag);
    const E* s = reinterpret_cast<const E*>(src);
    E* o = reinterpret_cast<E*>(dst);
    parallel_for(outer, grain_for(inner), [&](int64_t b, int64_t e) {
      std::vector<int64_t> idx(static_cast<size_t>(outer_rank));
      int64_t off = 0, rem = b;
      for (int64_t d = outer_rank - 1; d >= 0; --d) {
        idx[static_cast<size_t>(d)] = rem % shape[static_cast<size_t>(d)];
        rem /= shape[static_cast<size_t>(d)];
        off += idx[static_cast<size_t>(d)] * strides[static_cast<size_t>(d)];
      }
      for (int64_t row = b; row < e; ++row) {
        E* out = o + row * inner;
        const E* in = s + off;
        if (inner_stride == 1) {
          std::memcpy(out, in, static_cast<size_t>(inner) * sizeof(E));
        } else if (inner_stride == 0) {
          std::fill(out, out + inner, *in);
        } else {
          for (int64_t i = 0; i < inner; ++i) out[i] = in[i * inner_stride];
        }
        for (int64_t d = outer_rank - 1; d >= 0; --d) {
          size_t ud = static_cast<size_t>(d);
          off += strides[ud];
          if (++idx[ud] < shape[ud]) break;
          off -= strides[ud] * shape[ud];
          idx[ud] = 0;
        }
      }
    });
  });
}

}  // namespace cpu

namespace {

using cpu::by_size;
using cpu::copy_bytes;
using cpu::strided_copy;

// out[n][j][i] = in[n][i][j] for in of shape (batch, rows, cols). Square tiles keep both sides in cache;
// inside a full tile, B x B blocks go through a local buffer so rows are read and written as short
// contiguous runs (measured 1.3-2x faster than a plain tiled loop on 4096x4096 here).
template <class E, int B>
void transpose_tiles(const E* in, E* out, int64_t batch, int64_t rows, int64_t cols) {
  constexpr int64_t T = 64;
  const int64_t tr = (rows + T - 1) / T, tc = (cols + T - 1) / T, tiles = batch * tr * tc;
  parallel_for(tiles, grain_for(T * T), [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t n = t / (tr * tc), i0 = (t / tc) % tr * T, j0 = t % tc * T;
      const E* ib = in + n * rows * cols;
      E* ob = out + n * rows * cols;
      const int64_t i1 = std::min(i0 + T, rows), j1 = std::min(j0 + T, cols);
      if (i1 - i0 < T || j1 - j0 < T) {
        for (int64_t j = j0; j < j1; ++j)
          for (int64_t i = i0; i < i1; ++i) ob[j * rows + i] = ib[i * cols + j];
        continue;
      }
      for (int64_t bi = i0; bi < i1; bi += B)
        for (int64_t bj = j0; bj < j1; bj += B) {
          E blk[B][B];
          for (int i = 0; i < B; ++i) std::memcpy(blk[i], ib + (bi + i) * cols + bj, sizeof(E) * B);
          for (int j = 0; j < B; ++j)
            for (int i = 0; i < B; ++i) ob[(bj + j) * rows + bi + i] = blk[i][j];
        }
    }
  });
}

void batched_transpose(const void* src, void* dst, size_t esize, int64_t batch, int64_t rows, int64_t cols) {
  by_size(esize, [&](auto tag) {
    using E = decltype(tag);
    transpose_tiles<E, sizeof(E) == 8 ? 4 : 8>(static_cast<const E*>(src), static_cast<E*>(dst), batch, rows, cols);
  });
}

void noop_cpu(const KernelContext&) {}

void transpose_cpu(const KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const auto& perm = std::get<TransposeAttrs>(ctx.attrs).perm;
  if (y.num_elements() == 0) return;
  std::vector<int64_t> in_strides = x.shape().strides();
  // Merge output dims whose input dims stay adjacent and in order; what is left tells the case apart.
  std::vector<int64_t> shape, strides;
  for (size_t i = 0; i < perm.size(); ++i) {
    int64_t n = y.shape()[static_cast<int64_t>(i)], st = in_strides[static_cast<size_t>(perm[i])];
    if (n == 1) continue;
    if (!shape.empty() && strides.back() == st * n) {
      shape.back() *= n;
      strides.back() = st;
    } else {
      shape.push_back(n);
      strides.push_back(st);
    }
  }
  const DType dt = x.dtype();
  const size_t es = dtype_size(dt);
  if (dt != DType::String && shape.size() == 2 && strides[0] == 1 && strides[1] == shape[0]) {
    batched_transpose(x.raw_data(), y.raw_data(), es, 1, shape[1], shape[0]);
  } else if (dt != DType::String && shape.size() == 3 && strides[0] == shape[1] * shape[2] && strides[1] == 1 &&
             strides[2] == shape[1]) {
    batched_transpose(x.raw_data(), y.raw_data(), es, shape[0], shape[2], shape[1]);
  } else {
    strided_copy(x.raw_data(), y.raw_data(), dt, shape, strides);
  }
}

void concat_cpu(const KernelContext& ctx) {
  Tensor& y = ctx.outputs[0];
  int64_t axis = std::get<AxisAttrs>(ctx.attrs).axis;
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= y.shape()[d];
  if (y.num_elements() == 0) return;
  const DType dt = y.dtype();
  const size_t es = dtype_size(dt), row_bytes = y.nbytes() / static_cast<size_t>(outer);
  std::vector<size_t> part_bytes;
  for (const Tensor& t : ctx.inputs) part_bytes.push_back(t.nbytes() / static_cast<size_t>(outer));
  char* out = static_cast<char*>(y.raw_data());
  if (outer == 1 && dt != DType::String) {
    for (size_t k = 0; k < ctx.inputs.size(); ++k) {
      copy_bytes(out, static_cast<const char*>(ctx.inputs[k].raw_data()), part_bytes[k]);
      out += part_bytes[k];
    }
    return;
  }
  int64_t grain = std::max<int64_t>(1, kParallelGrain * 4 / static_cast<int64_t>(row_bytes));
  parallel_for(outer, grain, [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      char* dst = out + static_cast<size_t>(o) * row_bytes;
      for (size_t k = 0; k < ctx.inputs.size(); ++k) {
        copy_host_elements(dst,
                           static_cast<const char*>(ctx.inputs[k].raw_data()) + static_cast<size_t>(o) * part_bytes[k],
                           part_bytes[k] / es, dt);
        dst += part_bytes[k];
      }
    }
  });
}

void strided_slice_cpu(const KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const auto& a = std::get<StridedSliceAttrs>(ctx.attrs);
  if (y.num_elements() == 0) return;
  std::vector<int64_t> in_strides = x.shape().strides(), strides(in_strides.size());
  int64_t offset = 0;
  for (size_t d = 0; d < in_strides.size(); ++d) {
    offset += a.begin[d] * in_strides[d];
    strides[d] = a.strides[d] * in_strides[d];
  }
  strided_copy(static_cast<const char*>(x.raw_data()) + offset * static_cast<int64_t>(dtype_size(x.dtype())),
               y.raw_data(), x.dtype(), y.shape().dims(), strides);
}

void broadcast_to_cpu(const KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  strided_copy(x.raw_data(), y.raw_data(), x.dtype(), y.shape().dims(),
               broadcast_strides(x.shape(), y.shape()));
}

// Tiling (d0, d1) by (m0, m1) is broadcasting it as (1, d0, 1, d1) to (m0, d0, m1, d1).
void tile_cpu(const KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const auto& multiples = std::get<TileAttrs>(ctx.attrs).multiples;
  std::vector<int64_t> in_strides = x.shape().strides(), shape, strides;
  for (size_t d = 0; d < multiples.size(); ++d) {
    shape.push_back(multiples[d]);
    strides.push_back(0);
    shape.push_back(x.shape()[static_cast<int64_t>(d)]);
    strides.push_back(in_strides[d]);
  }
  strided_copy(x.raw_data(), y.raw_data(), x.dtype(), shape, strides);
}

}  // namespace

EMBER_REGISTER_KERNEL(reshape, CPU, noop_cpu, EMBER_ALL_DTYPES, DType::String);
EMBER_REGISTER_KERNEL(transpose, CPU, transpose_cpu, EMBER_ALL_DTYPES, DType::String);
EMBER_REGISTER_KERNEL(concat, CPU, concat_cpu, EMBER_ALL_DTYPES, DType::String);
EMBER_REGISTER_KERNEL(strided_slice, CPU, strided_slice_cpu, EMBER_ALL_DTYPES, DType::String);
EMBER_REGISTER_KERNEL(broadcast_to, CPU, broadcast_to_cpu, EMBER_ALL_DTYPES, DType::String);
EMBER_REGISTER_KERNEL(tile, CPU, tile_cpu, EMBER_ALL_DTYPES, DType::String);

}  // namespace ember
