// Backward formulas of the convolution and pooling ops (TF: nn_grad.py), written with eager ops so nested
// tapes can differentiate them again.
#include <limits>

#include "framework/autodiff/grad_registry.h"
#include "framework/autodiff/gradient_tape.h"
#include "framework/ops/array.h"
#include "framework/ops/creation.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/nn.h"

namespace ember {

namespace {

const char* padding_name(Padding p) { return p == Padding::Same ? "SAME" : "VALID"; }

// The front ends take the original options, not the resolved pads: recover them from the attrs.
ops::Conv2DOptions conv_options(const Conv2DAttrs& a) {
  return {.strides = a.strides, .padding = padding_name(a.padding), .dilations = a.dilations};
}

ops::Pool2DOptions pool_options(const Pool2DAttrs& a) {
  return {.strides = a.strides, .padding = padding_name(a.padding)};
}

// The gradients of conv2d's input and filters for the output gradient dy.
std::vector<Tensor> conv2d_input_grads(const GradContext& ctx, const Tensor& dy) {
  const auto& a = std::get<Conv2DAttrs>(ctx.attrs);
  const Tensor &x = ctx.inputs[0], &w = ctx.inputs[1];
  // A first layer's input leads to no source: its backprop_input (a whole convolution) is skipped.
  return {ctx.needs(0) ? ops::conv2d_backprop_input(x.shape(), w, dy, conv_options(a)) : Tensor(),
          ctx.needs(1) ? ops::conv2d_backprop_filter(x, w.shape(), dy, conv_options(a)) : Tensor()};
}

std::vector<Tensor> conv2d_grad(const GradContext& ctx) { return conv2d_input_grads(ctx, ctx.grads[0]); }

// The convolution's two gradients, and the bias's: dy summed over batch and space, as add's gradient does it. A
// fused relu first takes its gradient from the op's output, as relu's own formula does.
std::vector<Tensor> conv2d_bias_grad(const GradContext& ctx) {
  const Tensor dy = fused_activation_grad(std::get<Conv2DAttrs>(ctx.attrs).activation, ctx.grads[0], ctx.outputs[0]);
  std::vector<Tensor> grads = conv2d_input_grads(ctx, dy);
  const Tensor& bias = ctx.inputs[2];
  grads.push_back(ctx.needs(2) ? unbroadcast(dy, bias.shape()) : Tensor());
  return grads;
}

// conv2d_backprop_input(filters, out_backprop) is linear in each input: its adjoints are the other two
// members of the conv2d family.
std::vector<Tensor> conv2d_backprop_input_grad(const GradContext& ctx) {
  const auto& a = std::get<Conv2DAttrs>(ctx.attrs);
  const Tensor &w = ctx.inputs[0], &out_backprop = ctx.inputs[1], &dy = ctx.grads[0];
  return {ops::conv2d_backprop_filter(dy, w.shape(), out_backprop, conv_options(a)),
          ops::conv2d(dy, w, conv_options(a))};
}

std::vector<Tensor> conv2d_backprop_filter_grad(const GradContext& ctx) {
  const auto& a = std::get<Conv2DAttrs>(ctx.attrs);
  const Tensor &x = ctx.inputs[0], &out_backprop = ctx.inputs[1], &dy = ctx.grads[0];
  return {ops::conv2d_backprop_input(x.shape(), dy, out_backprop, conv_options(a)),
          ops::conv2d(x, dy, conv_options(a))};
}

std::vector<Tensor> max_pool2d_grad_fn(const GradContext& ctx) {
  const auto& a = std::get<Pool2DAttrs>(ctx.attrs);
  return {ops::max_pool2d_grad(ctx.inputs[0], ctx.outputs[0], ctx.grads[0], a.ksize, pool_options(a))};
}

std::vector<Tensor> avg_pool2d_grad_fn(const GradContext& ctx) {
  const auto& a = std::get<Pool2DAttrs>(ctx.attrs);
  return {ops::avg_pool2d_grad(ctx.inputs[0].shape(), ctx.grads[0], a.ksize, pool_options(a))};
}

// avg_pool2d_grad is linear in its input and is the adjoint of avg_pool2d.
std::vector<Tensor> avg_pool2d_grad_grad(const GradContext& ctx) {
  const auto& a = std::get<Pool2DAttrs>(ctx.attrs);
  return {ops::avg_pool2d(ctx.grads[0], a.ksize, pool_options(a))};
}

// TF's MaxPoolGradGrad: each window takes dy at the position max_pool2d_grad routed its gradient to (the first
// maximum, row-major). Built from one strided slice per window offset, so it runs on every backend; the
// selection masks depend only on orig_input, so they are computed off the tape.
Tensor max_pool2d_grad_grad(const Tensor& x, const Tensor& dy, const Pool2DAttrs& a, const Shape& out_shape) {
  const auto [pt, pb, pl, pr] = a.pads;
  const int64_t n = out_shape[0], oh = out_shape[1], ow = out_shape[2], c = out_shape[3];
  const std::vector<std::pair<int64_t, int64_t>> pads = {{0, 0}, {pt, pb}, {pl, pr}, {0, 0}};
  auto window_slice = [&](const Tensor& t, int64_t di, int64_t dj) {
    return ops::strided_slice(t, {0, di, dj, 0}, {n, di + (oh - 1) * a.strides[0] + 1, dj + (ow - 1) * a.strides[1] + 1, c},
                              {1, a.strides[0], a.strides[1], 1});
  };
  std::vector<Tensor> masks;
  {
    NoRecordScope no_record;
    // Padding pixels are outside the clipped windows: `valid` excludes them even when a window is all -inf.
    Tensor xp = ops::pad(x, pads, {.constant_values = -std::numeric_limits<double>::infinity()});
    Tensor valid = ops::pad(ops::ones_like(x), pads);
    Tensor y = ops::max_pool2d(x, a.ksize, pool_options(a));  // consistent with x even if orig_output is not
    Tensor found = ops::zeros(out_shape, x.dtype());
    for (int64_t di = 0; di < a.ksize[0]; ++di)
      for (int64_t dj = 0; dj < a.ksize[1]; ++dj) {
        Tensor hit = ops::cast(ops::equal(window_slice(xp, di, dj), y), x.dtype()) * window_slice(valid, di, dj);
        Tensor take = hit * (1.0 - found);
        found = found + take;
        masks.push_back(take);
      }
  }
  Tensor dyp = ops::pad(dy, pads);
  Tensor out;
  size_t k = 0;
  for (int64_t di = 0; di < a.ksize[0]; ++di)
    for (int64_t dj = 0; dj < a.ksize[1]; ++dj) {
      Tensor term = window_slice(dyp, di, dj) * masks[k++];
      out = out.defined() ? out + term : term;
    }
  return out;
}

// max_pool2d_grad(orig_input, orig_output, grad): piecewise constant in orig_input and orig_output (zeros, as
// TF), linear in grad.
std::vector<Tensor> max_pool2d_grad_grad_fn(const GradContext& ctx) {
  const auto& a = std::get<Pool2DAttrs>(ctx.attrs);
  const Tensor &x = ctx.inputs[0], &y = ctx.inputs[1], &grad = ctx.inputs[2];
  return {ops::zeros_like(x), ops::zeros_like(y), max_pool2d_grad_grad(x, ctx.grads[0], a, grad.shape())};
}

}  // namespace

EMBER_REGISTER_GRADIENT(conv2d, conv2d_grad);
EMBER_REGISTER_GRADIENT(conv2d_bias, conv2d_bias_grad);
EMBER_REGISTER_GRADIENT(conv2d_backprop_input, conv2d_backprop_input_grad);
EMBER_REGISTER_GRADIENT(conv2d_backprop_filter, conv2d_backprop_filter_grad);
EMBER_REGISTER_GRADIENT(max_pool2d, max_pool2d_grad_fn);
EMBER_REGISTER_GRADIENT(avg_pool2d, avg_pool2d_grad_fn);
EMBER_REGISTER_GRADIENT(max_pool2d_grad, max_pool2d_grad_grad_fn);
EMBER_REGISTER_GRADIENT(avg_pool2d_grad, avg_pool2d_grad_grad);

}  // namespace ember
