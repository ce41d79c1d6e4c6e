// CUDA registration of the reductions: collapses the input into kept and reduced dimension groups (as
// cpu/reduce.cpp does) and hands the geometry to the launchers in reduce.cu.
#include <utility>
#include <vector>

#include "framework/core/error.h"
#include "framework/ops/cuda/kernel_util.h"
#include "framework/ops/cuda/reduce_launch.h"
#include "framework/ops/dispatch.h"

namespace ember {
namespace {

// Size-1 dimensions are dropped and neighbours of one kind merged (the input is contiguous, so any two
// neighbours merge); the groups are then listed as kept or reduced, each with its input stride.
cuda::ReduceGeom reduce_cuda_plan(const Tensor& x, const std::vector<bool>& reduced, int64_t n_out, int64_t count,
                                  const char* op) {
  struct Group {
    int64_t size, stride;
    bool reduced;
  };
  const std::vector<int64_t> strides = x.shape().strides();
  std::vector<Group> groups;
  for (int64_t d = 0; d < x.rank(); ++d) {
    const int64_t s = x.shape()[d];
    const bool r = reduced[static_cast<size_t>(d)];
    if (s == 1) continue;
    if (!groups.empty() && groups.back().reduced == r) {
      groups.back().size *= s;
      groups.back().stride = strides[static_cast<size_t>(d)];
    } else {
      groups.push_back({s, strides[static_cast<size_t>(d)], r});
    }
  }
  cuda::ReduceGeom g;
  g.n_out = n_out;
  g.count = count;
  for (const Group& grp : groups) {
    int& n = grp.reduced ? g.n_red : g.n_kept;
    EMBER_CHECK(n < cuda::kReduceMaxDims, Unimplemented)
        << op << ": the CUDA kernel handles at most " << cuda::kReduceMaxDims << " separate "
        << (grp.reduced ? "reduced" : "kept") << " dimension groups, got more for input shape " << x.shape()
        << " (device " << x.device() << ", dtype " << x.dtype() << ")";
    (grp.reduced ? g.red_size : g.kept_size)[n] = grp.size;
    (grp.reduced ? g.red_stride : g.kept_stride)[n] = grp.stride;
    ++n;
  }
  return g;
}

void reduce_cuda_run(const KernelContext& ctx, cuda::ReduceKind kind) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const char* op = op_name(ctx.op);
  const auto& attrs = std::get<ReduceAttrs>(ctx.attrs);
  const int64_t n_out = y.num_elements();
  if (n_out == 0) return;
  const int dev = cuda::device_of(ctx);
  const cudaStream_t stream = cuda::stream(dev);

  std::vector<bool> reduced(static_cast<size_t>(x.rank()), false);
  int64_t count = 1;
  for (int64_t a : attrs.axes) {
    reduced[static_cast<size_t>(a)] = true;
    count *= x.shape()[a];
  }
  if (count == 1) {  // only size-1 dimensions (or none) are reduced: the values are the result
    EMBER_CUDA_CHECK(cudaMemcpyAsync(y.raw_data(), x.raw_data(), y.nbytes(), cudaMemcpyDeviceToDevice, stream), op);
    return;
  }
  const cuda::ReduceGeom g = reduce_cuda_plan(x, reduced, n_out, count, op);
  cuda::reduce_launch(kind, cuda::to_dt(x.dtype()), x.raw_data(), y.raw_data(), g, dev, stream, op);
}

void reduce_sum_cuda(const KernelContext& ctx) { reduce_cuda_run(ctx, cuda::ReduceKind::Sum); }
void reduce_mean_cuda(const KernelContext& ctx) { reduce_cuda_run(ctx, cuda::ReduceKind::Mean); }
void reduce_max_cuda(const KernelContext& ctx) { reduce_cuda_run(ctx, cuda::ReduceKind::Max); }
void reduce_min_cuda(const KernelContext& ctx) { reduce_cuda_run(ctx, cuda::ReduceKind::Min); }
void reduce_prod_cuda(const KernelContext& ctx) { reduce_cuda_run(ctx, cuda::ReduceKind::Prod); }
void reduce_all_cuda(const KernelContext& ctx) { reduce_cuda_run(ctx, cuda::ReduceKind::All); }
void reduce_any_cuda(const KernelContext& ctx) { reduce_cuda_run(ctx, cuda::ReduceKind::Any); }

template <bool kMax>
void reduce_cuda_arg(const KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const auto& attrs = std::get<ArgReduceAttrs>(ctx.attrs);
  int64_t outer = 1, inner = 1;
  const int64_t red = x.shape()[attrs.axis];
  for (int64_t d = 0; d < attrs.axis; ++d) outer *= x.shape()[d];
  for (int64_t d = attrs.axis + 1; d < x.rank(); ++d) inner *= x.shape()[d];
  if (outer * inner == 0 || red == 0) return;  // the front end rejects an empty axis
  const int dev = cuda::device_of(ctx);
  cuda::reduce_arg_launch(kMax, cuda::to_dt(x.dtype()), cuda::to_dt(y.dtype()), x.raw_data(), y.raw_data(), outer,
                          red, inner, dev, cuda::stream(dev), op_name(ctx.op));
}

}  // namespace

EMBER_REGISTER_KERNEL(reduce_sum, CUDA, reduce_sum_cuda, EMBER_NUMERIC_DTYPES);
EMBER_REGISTER_KERNEL(reduce_mean, CUDA, reduce_mean_cuda, EMBER_NUMERIC_DTYPES);
EMBER_REGISTER_KERNEL(reduce_max, CUDA, reduce_max_cuda, EMBER_NUMERIC_DTYPES);
EMBER_REGISTER_KERNEL(reduce_min, CUDA, reduce_min_cuda, EMBER_NUMERIC_DTYPES);
EMBER_REGISTER_KERNEL(reduce_prod, CUDA, reduce_prod_cuda, EMBER_NUMERIC_DTYPES);
EMBER_REGISTER_KERNEL(reduce_all, CUDA, reduce_all_cuda, DType::Bool);
EMBER_REGISTER_KERNEL(reduce_any, CUDA, reduce_any_cuda, DType::Bool);
EMBER_REGISTER_KERNEL(argmax, CUDA, reduce_cuda_arg<true>, EMBER_NUMERIC_DTYPES);
EMBER_REGISTER_KERNEL(argmin, CUDA, reduce_cuda_arg<false>, EMBER_NUMERIC_DTYPES);

}  // namespace ember
