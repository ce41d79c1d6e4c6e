// Backward formulas of the shape ops: reshape, transpose, concat, pad, tile, broadcast_to (TF's
// array_grad.py). Every formula is made of eager ops, so nested tapes differentiate it again.
#include <vector>

#include "framework/autodiff/grad_registry.h"
#include "framework/ops/array.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"

namespace ember {

namespace {

std::vector<Tensor> reshape_grad(const GradContext& ctx) { return {ops::reshape(ctx.grads[0], ctx.inputs[0].shape())}; }

std::vector<Tensor> transpose_grad(const GradContext& ctx) {
  const auto& perm = std::get<TransposeAttrs>(ctx.attrs).perm;
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return {ops::transpose(ctx.grads[0], std::move(inverse))};
}

std::vector<Tensor> concat_grad(const GradContext& ctx) {
  int64_t axis = std::get<AxisAttrs>(ctx.attrs).axis;
  if (ctx.inputs.size() == 1) return {ctx.grads[0]};
  std::vector<int64_t> sizes;
  sizes.reserve(ctx.inputs.size());
  for (const Tensor& x : ctx.inputs) sizes.push_back(x.shape()[axis]);
  return ops::split(ctx.grads[0], sizes, axis);
}

// x reversed along axis (strided_slice with stride -1).
Tensor reverse_axis(const Tensor& x, int64_t axis) {
  size_t r = static_cast<size_t>(x.rank());
  std::vector<int64_t> zeros(r, 0), strides(r, 1);
  strides[static_cast<size_t>(axis)] = -1;
  int64_t all = (int64_t{1} << r) - 1;
  return ops::strided_slice(x, zeros, zeros, strides, {.begin_mask = all, .end_mask = all});
}

// x[start : start + len] along axis.
Tensor grad_slice_axis(const Tensor& x, int64_t axis, int64_t start, int64_t len) {
  std::vector<int64_t> begin(static_cast<size_t>(x.rank()), 0), size(x.shape().begin(), x.shape().end());
  begin[static_cast<size_t>(axis)] = start;
  size[static_cast<size_t>(axis)] = len;
  return ops::slice(x, begin, size);
}

// Zero-pads x by (before, after) along axis.
Tensor pad_axis(const Tensor& x, int64_t axis, int64_t before, int64_t after) {
  std::vector<std::pair<int64_t, int64_t>> p(static_cast<size_t>(x.rank()), {0, 0});
  p[static_cast<size_t>(axis)] = {before, after};
  return ops::pad(x, p);
}

// TF's MirrorPadGrad, one dimension at a time: each mirrored border is reversed and added back onto
// the elements it copied. REFLECT skips the edge element (offset 1), SYMMETRIC repeats it (offset 0).
Tensor mirror_pad_grad(Tensor g, const Shape& in_shape, const PadAttrs& a) {
  const int64_t offset = a.mode == PadMode::Reflect ? 1 : 0;
  for (int64_t d = 0; d < in_shape.rank(); ++d) {
    auto [before, after] = a.paddings[static_cast<size_t>(d)];
    if (before == 0 && after == 0) continue;
    const int64_t n = in_shape[d];
    Tensor acc = grad_slice_axis(g, d, before, n);
    if (before > 0) {
      Tensor left = reverse_axis(grad_slice_axis(g, d, 0, before), d);
      acc = ops::add(acc, pad_axis(left, d, offset, n - offset - before));
    }
    if (after > 0) {
      Tensor right = reverse_axis(grad_slice_axis(g, d, before + n, after), d);
      acc = ops::add(acc, pad_axis(right, d, n - offset - after, offset));
    }
    g = acc;
  }
  return g;
}

std::vector<Tensor> pad_grad(const GradContext& ctx) {
  const auto& a = std::get<PadAttrs>(ctx.attrs);
  const Shape& in_shape = ctx.inputs[0].shape();
  if (a.mode != PadMode::Constant) return {mirror_pad_grad(ctx.grads[0], in_shape, a)};
  std::vector<int64_t> begin;
  for (const auto& p : a.paddings) begin.push_back(p.first);
  return {ops::slice(ctx.grads[0], begin, std::vector<int64_t>(in_shape.begin(), in_shape.end()))};
}

// dy of shape (m0*d0, m1*d1, ...) viewed as (m0, d0, m1, d1, ...) and summed over the multiples.
std::vector<Tensor> tile_grad(const GradContext& ctx) {
  const auto& multiples = std::get<TileAttrs>(ctx.attrs).multiples;
  const Shape& in_shape = ctx.inputs[0].shape();
  Shape split;
  std::vector<int64_t> axes;
  for (int64_t d = 0; d < in_shape.rank(); ++d) {
    int64_t m = multiples[static_cast<size_t>(d)];
    if (m == 1) {
      split.push_back(in_shape[d]);
      continue;
    }
    axes.push_back(split.rank());
    split.push_back(m);
    split.push_back(in_shape[d]);
  }
  if (axes.empty()) return {ctx.grads[0]};
  return {ops::reduce_sum(ops::reshape(ctx.grads[0], split), axes)};
}

std::vector<Tensor> broadcast_to_grad(const GradContext& ctx) {
  return {unbroadcast(ctx.grads[0], ctx.inputs[0].shape())};
}

}  // namespace

EMBER_REGISTER_GRADIENT(reshape, reshape_grad);
EMBER_REGISTER_GRADIENT(transpose, transpose_grad);
EMBER_REGISTER_GRADIENT(concat, concat_grad);
EMBER_REGISTER_GRADIENT(pad, pad_grad);
EMBER_REGISTER_GRADIENT(tile, tile_grad);
EMBER_REGISTER_GRADIENT(broadcast_to, broadcast_to_grad);

}  // namespace ember
