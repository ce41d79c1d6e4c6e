// CUDA registration of the shape ops (reshape, transpose, concat, strided_slice, broadcast_to, tile). Each
// is planned as a strided copy, as in cpu/array.cpp: unit dims are dropped, dims that stay adjacent on both
// sides merged and contiguous runs widened to 8-byte moves, so what remains is a memcpy, a tiled
// transpose or the generic strided kernel.
#include <cstdint>
#include <vector>

#include "framework/core/error.h"
#include "framework/ops/broadcast.h"
#include "framework/ops/cuda/array_launch.h"
#include "framework/ops/cuda/kernel_util.h"
#include "framework/ops/dispatch.h"

namespace ember {
namespace {

// dst <- src over `shape`, reading with src_strides and writing with dst_strides (nullptr: dst is dense
// row-major). All strides are in elements of esize bytes.
void array_cuda_copy(const KernelContext& ctx, const void* src, void* dst, size_t esize,
                     const std::vector<int64_t>& shape_in, const std::vector<int64_t>& src_in,
                     const std::vector<int64_t>* dst_in) {
  const char* op = op_name(ctx.op);
  int64_t total = 1;
  for (int64_t n : shape_in) total *= n;
  if (total == 0) return;
  const bool dense = dst_in == nullptr;
  std::vector<int64_t> dst_strides(shape_in.size());
  if (dense) {
    int64_t acc = 1;
    for (size_t d = shape_in.size(); d-- > 0;) {
      dst_strides[d] = acc;
      acc *= shape_in[d];
    }
  } else {
    dst_strides = *dst_in;
  }
  std::vector<int64_t> shape, ss, ds;
  for (size_t d = 0; d < shape_in.size(); ++d) {
    const int64_t n = shape_in[d];
    if (n == 1) continue;
    if (!shape.empty() && ss.back() == src_in[d] * n && ds.back() == dst_strides[d] * n) {
      shape.back() *= n;
      ss.back() = src_in[d];
      ds.back() = dst_strides[d];
    } else {
      shape.push_back(n);
      ss.push_back(src_in[d]);
      ds.push_back(dst_strides[d]);
    }
  }
  // Contiguous innermost runs move as wider elements while sizes, strides and addresses allow it.
  auto aligned = [](const void* p, size_t a) { return reinterpret_cast<uintptr_t>(p) % a == 0; };
  while (esize < 8 && !shape.empty() && ss.back() == 1 && ds.back() == 1 && shape.back() % 2 == 0 &&
         aligned(src, esize * 2) && aligned(dst, esize * 2)) {
    bool even = true;
    for (size_t d = 0; d + 1 < shape.size(); ++d) even = even && ss[d] % 2 == 0 && ds[d] % 2 == 0;
    if (!even) break;
    esize *= 2;
    shape.back() /= 2;
    for (size_t d = 0; d + 1 < shape.size(); ++d) {
      ss[d] /= 2;
      ds[d] /= 2;
    }
  }

  const int dev = cuda::device_of(ctx);
  const cudaStream_t stream = cuda::stream(dev);
  const int es = static_cast<int>(esize);
  if (shape.empty() || (shape.size() == 1 && ss[0] == 1 && ds[0] == 1)) {
    const size_t bytes = (shape.empty() ? 1 : static_cast<size_t>(shape[0])) * esize;
    EMBER_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream), op);
    return;
  }
  if (dense && shape.size() == 2 && ss[0] == 1 && ss[1] == shape[0] && cuda::array_transpose_fits(1, shape[1])) {
    cuda::array_batched_transpose(src, dst, es, 1, shape[1], shape[0], dev, stream, op);
    return;
  }
  if (dense && shape.size() == 3 && ss[0] == shape[1] * shape[2] && ss[1] == 1 && ss[2] == shape[1] &&
      cuda::array_transpose_fits(shape[0], shape[2])) {
    cuda::array_batched_transpose(src, dst, es, shape[0], shape[2], shape[1], dev, stream, op);
    return;
  }
  EMBER_CHECK(shape.size() <= static_cast<size_t>(cuda::kArrayMaxDims), Unimplemented)
      << op << ": the CUDA strided copy handles at most " << cuda::kArrayMaxDims << " non-mergeable dimensions, got "
      << shape.size() << " (output dimensions " << Shape(shape_in) << ", device " << ctx.outputs[0].device() << ", dtype "
      << ctx.outputs[0].dtype() << ")";
  cuda::ArrayCopyGeom g;
  g.rank = static_cast<int>(shape.size());
  g.dst_dense = dense;
  for (size_t d = 0; d < shape.size(); ++d) {
    g.size[d] = shape[d];
    g.src_stride[d] = ss[d];
    g.dst_stride[d] = ds[d];
  }
  cuda::array_strided_copy(src, dst, es, g, dev, stream, op);
}

void array_cuda_noop(const KernelContext&) {}

void array_cuda_transpose(const KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const auto& perm = std::get<TransposeAttrs>(ctx.attrs).perm;
  const std::vector<int64_t> in_strides = x.shape().strides();
  std::vector<int64_t> strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) strides[i] = in_strides[static_cast<size_t>(perm[i])];
  array_cuda_copy(ctx, x.raw_data(), y.raw_data(), dtype_size(x.dtype()), y.shape().dims(), strides, nullptr);
}

// Each input fills a column band of the output seen as (outer, row).
void array_cuda_concat(const KernelContext& ctx) {
  Tensor& y = ctx.outputs[0];
  const int64_t axis = std::get<AxisAttrs>(ctx.attrs).axis;
  if (y.num_elements() == 0) return;
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= y.shape()[d];
  const int64_t row = y.num_elements() / outer;
  const size_t es = dtype_size(y.dtype());
  char* out = static_cast<char*>(y.raw_data());
  const std::vector<int64_t> dst_strides{row, 1};
  int64_t col = 0;
  for (const Tensor& t : ctx.inputs) {
    const int64_t part = t.num_elements() / outer;
    if (part == 0) continue;
    array_cuda_copy(ctx, t.raw_data(), out + static_cast<size_t>(col) * es, es, {outer, part}, {part, 1},
                    &dst_strides);
    col += part;
  }
}

void array_cuda_strided_slice(const KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const auto& a = std::get<StridedSliceAttrs>(ctx.attrs);
  if (y.num_elements() == 0) return;
  const std::vector<int64_t> in_strides = x.shape().strides();
  std::vector<int64_t> strides(in_strides.size());
  int64_t offset = 0;
  for (size_t d = 0; d < in_strides.size(); ++d) {
    offset += a.begin[d] * in_strides[d];
    strides[d] = a.strides[d] * in_strides[d];
  }
  const size_t es = dtype_size(x.dtype());
  array_cuda_copy(ctx, static_cast<const char*>(x.raw_data()) + offset * static_cast<int64_t>(es), y.raw_data(), es,
                  y.shape().dims(), strides, nullptr);
}

void array_cuda_broadcast_to(const KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  array_cuda_copy(ctx, x.raw_data(), y.raw_data(), dtype_size(x.dtype()), y.shape().dims(),
                  broadcast_strides(x.shape(), y.shape()), nullptr);
}

// Tiling (d0, d1) by (m0, m1) is broadcasting it as (1, d0, 1, d1) to (m0, d0, m1, d1).
void array_cuda_tile(const KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const auto& multiples = std::get<TileAttrs>(ctx.attrs).multiples;
  const std::vector<int64_t> in_strides = x.shape().strides();
  std::vector<int64_t> shape, strides;
  for (size_t d = 0; d < multiples.size(); ++d) {
    shape.push_back(multiples[d]);
    strides.push_back(0);
    shape.push_back(x.shape()[static_cast<int64_t>(d)]);
    strides.push_back(in_strides[d]);
  }
  array_cuda_copy(ctx, x.raw_data(), y.raw_data(), dtype_size(x.dtype()), shape, strides, nullptr);
}

}  // namespace

// reshape's output views its input (OutputSpec::alias_input), so there is nothing to move.
EMBER_REGISTER_KERNEL(reshape, CUDA, array_cuda_noop, EMBER_ALL_DTYPES);
EMBER_REGISTER_KERNEL(transpose, CUDA, array_cuda_transpose, EMBER_ALL_DTYPES);
EMBER_REGISTER_KERNEL(concat, CUDA, array_cuda_concat, EMBER_ALL_DTYPES);
EMBER_REGISTER_KERNEL(strided_slice, CUDA, array_cuda_strided_slice, EMBER_ALL_DTYPES);
EMBER_REGISTER_KERNEL(broadcast_to, CUDA, array_cuda_broadcast_to, EMBER_ALL_DTYPES);
EMBER_REGISTER_KERNEL(tile, CUDA, array_cuda_tile, EMBER_ALL_DTYPES);

}  // namespace ember
