// CUDA registration of the indexing ops (gather, unsorted_segment_sum, one_hot, pad): the geometry of
// cpu/indexing.cpp, planned on the host and launched from indexing.cu.
#include <cstring>
#include <vector>

#include "framework/core/config.h"
#include "framework/core/error.h"
#include "framework/ops/cuda/indexing_launch.h"
#include "framework/ops/cuda/kernel_util.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/index_checks.h"

namespace ember {
namespace {

int64_t indexing_cuda_prod(const Shape& s, int64_t from, int64_t to) {
  int64_t p = 1;
  for (int64_t d = from; d < to; ++d) p *= s[d];
  return p;
}

// The value converted to dtype (as the CPU converts it), as raw bits of its element size.
uint64_t indexing_cuda_value_bits(double v, DType dtype) {
  uint64_t bits = 0;
  EMBER_DISPATCH_ALL(dtype, "indexing", {
    scalar_t c = static_cast<scalar_t>(v);
    std::memcpy(&bits, &c, sizeof(scalar_t));
  });
  return bits;
}

void indexing_cuda_gather(const KernelContext& ctx) {
  const Tensor& params = ctx.inputs[0];
  const Tensor& indices = ctx.inputs[1];
  Tensor& y = ctx.outputs[0];
  const auto& a = std::get<GatherAttrs>(ctx.attrs);
  if (y.num_elements() == 0) return;
  const Shape& ps = params.shape();
  const int64_t batch = indexing_cuda_prod(ps, 0, a.batch_dims), outer = indexing_cuda_prod(ps, a.batch_dims, a.axis);
  const int64_t n = ps[a.axis], inner = indexing_cuda_prod(ps, a.axis + 1, ps.rank());
  const int64_t k = indexing_cuda_prod(indices.shape(), a.batch_dims, indices.rank());
  // Rows move in the widest unit their size and addresses allow.
  const size_t row_bytes = static_cast<size_t>(inner) * dtype_size(params.dtype());
  const auto src = reinterpret_cast<uintptr_t>(params.raw_data()), dst = reinterpret_cast<uintptr_t>(y.raw_data());
  int unit = 8;
  while (unit > 1 && (row_bytes % unit != 0 || src % unit != 0 || dst % unit != 0)) unit /= 2;
  const int dev = cuda::device_of(ctx);
  cuda::indexing_gather(params.raw_data(), indices.raw_data(), cuda::to_dt(indices.dtype()), y.raw_data(), unit, batch,
                        outer, n, k, static_cast<int64_t>(row_bytes / static_cast<size_t>(unit)), dev,
                        cuda::stream(dev), op_name(ctx.op));
}

void indexing_cuda_unsorted_segment_sum(const KernelContext& ctx) {
  const Tensor& data = ctx.inputs[0];
  const Tensor& ids = ctx.inputs[1];
  Tensor& y = ctx.outputs[0];
  const int64_t segments = std::get<SegmentAttrs>(ctx.attrs).num_segments;
  const int64_t rows = ids.num_elements(), inner = indexing_cuda_prod(data.shape(), ids.rank(), data.rank());
  const int dev = cuda::device_of(ctx);
  cuda::indexing_segment_sum(cuda::to_dt(data.dtype()), data.raw_data(), ids.raw_data(), cuda::to_dt(ids.dtype()),
                             y.raw_data(), rows, inner, segments, config::is_op_determinism_enabled(), dev,
                             cuda::stream(dev), op_name(ctx.op));
}

void indexing_cuda_one_hot(const KernelContext& ctx) {
  const Tensor& indices = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const auto& a = std::get<OneHotAttrs>(ctx.attrs);
  if (y.num_elements() == 0) return;
  const int64_t outer = indexing_cuda_prod(indices.shape(), 0, a.axis);
  const int64_t inner = indexing_cuda_prod(indices.shape(), a.axis, indices.rank());
  const int dev = cuda::device_of(ctx);
  cuda::indexing_one_hot(indices.raw_data(), cuda::to_dt(indices.dtype()), y.raw_data(),
                         static_cast<int>(dtype_size(y.dtype())), indexing_cuda_value_bits(a.on_value, y.dtype()),
                         indexing_cuda_value_bits(a.off_value, y.dtype()), outer, a.depth, inner, dev,
                         cuda::stream(dev), op_name(ctx.op));
}

// Unpadded size-1 dims are dropped and neighbouring unpadded dims merged, so the kernel walks few dims.
void indexing_cuda_pad(const KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const auto& a = std::get<PadAttrs>(ctx.attrs);
  const char* op = op_name(ctx.op);
  if (y.num_elements() == 0) return;
  struct Dim {
    int64_t in, before, after;
  };
  std::vector<Dim> dims;
  bool padded = false;
  for (int64_t d = 0; d < x.rank(); ++d) {
    const auto [b, e] = a.paddings[static_cast<size_t>(d)];
    const int64_t n = x.shape()[d];
    const bool pad = b != 0 || e != 0;
    padded = padded || pad;
    if (!pad && n == 1) continue;
    if (!pad && !dims.empty() && dims.back().before == 0 && dims.back().after == 0) {
      dims.back().in *= n;
    } else {
      dims.push_back({n, b, e});
    }
  }
  const int dev = cuda::device_of(ctx);
  const cudaStream_t stream = cuda::stream(dev);
  if (!padded) {
    EMBER_CUDA_CHECK(cudaMemcpyAsync(y.raw_data(), x.raw_data(), x.nbytes(), cudaMemcpyDeviceToDevice, stream), op);
    return;
  }
  EMBER_CHECK(dims.size() <= static_cast<size_t>(cuda::kIndexingPadMaxDims), Unimplemented)
      << op << ": the CUDA kernel handles at most " << cuda::kIndexingPadMaxDims
      << " dimensions after merging unpadded neighbours, got " << dims.size() << " for input shape " << x.shape()
      << " (device " << x.device() << ", dtype " << x.dtype() << ")";
  cuda::IndexingPadGeom g;
  g.rank = static_cast<int>(dims.size());
  int64_t stride = 1;
  for (size_t d = dims.size(); d-- > 0;) {
    g.in_size[d] = dims[d].in;
    g.before[d] = dims[d].before;
    g.out_size[d] = dims[d].before + dims[d].in + dims[d].after;
    g.in_stride[d] = stride;
    stride *= dims[d].in;
  }
  const cuda::IndexingPadMode mode = a.mode == PadMode::Constant  ? cuda::IndexingPadMode::Constant
                                     : a.mode == PadMode::Reflect ? cuda::IndexingPadMode::Reflect
                                                                  : cuda::IndexingPadMode::Symmetric;
  cuda::indexing_pad(x.raw_data(), y.raw_data(), static_cast<int>(dtype_size(x.dtype())), g, mode,
                     indexing_cuda_value_bits(a.constant_value, x.dtype()), dev, stream, op);
}

// The index checks of gather, unsorted_segment_sum and the sparse crossentropies, on the device.
void indexing_cuda_check_range(const char* op, const char* what, const Tensor& indices, int64_t limit) {
  const int dev = indices.device().index();
  cuda::activate(dev);
  const cuda::DeviceCheck check = cuda::begin_device_check(dev, op, what, limit);
  cuda::indexing_check_range(indices.raw_data(), cuda::to_dt(indices.dtype()), indices.num_elements(), limit, check,
                             dev, cuda::stream(dev), op);
}

const bool indexing_cuda_check_registered = [] {
  ops::detail::register_device_index_check(DeviceType::CUDA, &indexing_cuda_check_range);
  return true;
}();

}  // namespace

EMBER_REGISTER_KERNEL(gather, CUDA, indexing_cuda_gather, EMBER_ALL_DTYPES);
EMBER_REGISTER_KERNEL(unsorted_segment_sum, CUDA, indexing_cuda_unsorted_segment_sum, EMBER_NUMERIC_DTYPES);
EMBER_REGISTER_KERNEL(one_hot, CUDA, indexing_cuda_one_hot, DType::Int32, DType::Int64, DType::UInt8);
EMBER_REGISTER_KERNEL(pad, CUDA, indexing_cuda_pad, EMBER_ALL_DTYPES);

}  // namespace ember
