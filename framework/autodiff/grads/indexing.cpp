// Backward formulas of the indexing ops: strided_slice, gather, unsorted_segment_sum (TF's
// array_grad.py and math_grad.py), made of eager ops so nested tapes differentiate them again.
#include <vector>

#include "framework/autodiff/grad_registry.h"
#include "framework/ops/array.h"
#include "framework/ops/creation.h"
#include "framework/ops/elementwise.h"

namespace ember {

namespace {

// Scatters dy back into zeros shaped like the input. Per dimension the slice picks begin + k * stride
// for k < n: negative strides are reversed first (picking lo + k * |stride| instead), strides > 1 are
// undone by interleaving zeros (view as (n, 1), pad to (n, s), flatten), and a final pad places the
// block at lo.
std::vector<Tensor> strided_slice_grad(const GradContext& ctx) {
  const auto& a = std::get<StridedSliceAttrs>(ctx.attrs);
  const Tensor& x = ctx.inputs[0];
  const Shape& in_shape = x.shape();
  const int64_t r = in_shape.rank();
  if (a.out_shape.num_elements() == 0) return {ops::zeros_like(x)};
  Tensor g = ctx.grads[0];

  std::vector<int64_t> lo(static_cast<size_t>(r)), step(static_cast<size_t>(r));
  bool any_negative = false, any_step = false;
  for (int64_t d = 0; d < r; ++d) {
    size_t i = static_cast<size_t>(d);
    int64_t s = a.strides[i], n = a.out_shape[d];
    lo[i] = s > 0 ? a.begin[i] : a.begin[i] + (n - 1) * s;
    step[i] = s > 0 ? s : -s;
    any_negative = any_negative || (s < 0 && n > 1);
    any_step = any_step || (step[i] > 1 && n > 1);
  }
  if (any_negative) {
    std::vector<int64_t> zeros(static_cast<size_t>(r), 0), signs(static_cast<size_t>(r));
    for (size_t i = 0; i < signs.size(); ++i) signs[i] = a.strides[i] < 0 ? -1 : 1;
    int64_t all = (int64_t{1} << r) - 1;
    g = ops::strided_slice(g, zeros, zeros, signs, {.begin_mask = all, .end_mask = all});
  }
  // Extent of the block g covers in each input dimension.
  std::vector<int64_t> extent(a.out_shape.begin(), a.out_shape.end());
  if (any_step) {
    Shape interleaved, spread;
    std::vector<std::pair<int64_t, int64_t>> gaps;
    std::vector<int64_t> begin(static_cast<size_t>(r), 0);
    bool trim = false;
    for (int64_t d = 0; d < r; ++d) {
      size_t i = static_cast<size_t>(d);
      int64_t n = a.out_shape[d], s = n > 1 ? step[i] : 1;
      interleaved.push_back(n);
      interleaved.push_back(1);
      gaps.push_back({0, 0});
      gaps.push_back({0, s - 1});
      spread.push_back(n * s);
      extent[i] = (n - 1) * s + 1;
      trim = trim || s > 1;
    }
    g = ops::reshape(ops::pad(ops::reshape(g, interleaved), gaps), spread);
    // The trailing s - 1 zeros of the last element may run past the input's end: cut them off.
    if (trim) g = ops::slice(g, begin, extent);
  }
  std::vector<std::pair<int64_t, int64_t>> place(static_cast<size_t>(r));
  for (int64_t d = 0; d < r; ++d) {
    size_t i = static_cast<size_t>(d);
    place[i] = {lo[i], in_shape[d] - lo[i] - extent[i]};
  }
  return {ops::pad(g, place)};
}

// TF's _GatherV2Grad and _BatchGatherGrad in one: with params viewed as (B, M, D, I) (batch dims,
// dims before axis, the gathered axis, dims after) and dy as (B, M, J, I), each batch's indices are
// offset by b * D so that one unsorted_segment_sum over (B * J) rows gives the (B * D) rows of the
// gradient.
std::vector<Tensor> gather_grad(const GradContext& ctx) {
  const auto& a = std::get<GatherAttrs>(ctx.attrs);
  const Tensor& params = ctx.inputs[0];
  const Tensor& indices = ctx.inputs[1];
  const Shape& ps = params.shape();
  auto prod = [](const Shape& s, int64_t from, int64_t to) {
    int64_t p = 1;
    for (int64_t d = from; d < to; ++d) p *= s[d];
    return p;
  };
  const int64_t nb = prod(ps, 0, a.batch_dims), nm = prod(ps, a.batch_dims, a.axis), depth = ps[a.axis];
  const int64_t ni = prod(ps, a.axis + 1, ps.rank()), nj = prod(indices.shape(), a.batch_dims, indices.rank());
  if (nb * nj == 0 || depth == 0) return {ops::zeros_like(params), Tensor()};

  Tensor g = ops::reshape(ctx.grads[0], Shape{nb, nm, nj, ni});
  if (nm > 1 && nj > 1) g = ops::transpose(g, {0, 2, 1, 3});
  g = ops::reshape(g, Shape{nb * nj, nm, ni});

  Tensor ids = ops::reshape(indices, Shape{nb, nj});
  if (nb > 1) {
    Tensor offsets = ops::range(0, static_cast<double>(nb * depth), static_cast<double>(depth), indices.dtype());
    ids = ops::add(ids, ops::reshape(offsets, Shape{nb, 1}));
  }
  ids = ops::reshape(ids, Shape{nb * nj});

  Tensor sums = ops::reshape(ops::unsorted_segment_sum(g, ids, nb * depth), Shape{nb, depth, nm, ni});
  if (nm > 1 && depth > 1) sums = ops::transpose(sums, {0, 2, 1, 3});
  return {ops::reshape(sums, ps), Tensor()};
}

std::vector<Tensor> unsorted_segment_sum_grad(const GradContext& ctx) {
  return {ops::gather(ctx.grads[0], ctx.inputs[1]), Tensor()};
}

}  // namespace

EMBER_REGISTER_GRADIENT(strided_slice, strided_slice_grad);
EMBER_REGISTER_GRADIENT(gather, gather_grad);
EMBER_REGISTER_GRADIENT(unsorted_segment_sum, unsorted_segment_sum_grad);

}  // namespace ember
