#pragma once
// Neural-network ops, NHWC (TF: tf.nn.softmax, tf.nn.conv2d, tf.nn.max_pool2d, ...).
#include <array>
#include <string>

#include "framework/core/tensor.h"

namespace ember::ops {

// Numerically stable softmax / log-softmax along axis.
Tensor softmax(const Tensor& logits, int64_t axis = -1);
Tensor log_softmax(const Tensor& logits, int64_t axis = -1);
// TF's tf.nn.sparse_softmax_cross_entropy_with_logits: for float32/float64 logits [..., C] and int32/int64
// labels [...] in [0, C), the loss of each row, log(sum(exp(x - max))) - (x[label] - max), in one pass
// (TF's SparseSoftmaxCrossEntropyWithLogits op). Its gradient is dloss * (softmax(logits) - one_hot(labels)):
// sparse_softmax_cross_entropy_backprop below, or, while a tape records ops on the logits, the differentiable
// ops, so a second derivative is right too (TF refuses one). A label outside
// [0, C) is an InvalidArgument on every device (read on the host, as gather's indices).
Tensor sparse_softmax_cross_entropy_with_logits(const Tensor& labels, const Tensor& logits);
// Its gradient before dloss, softmax(logits) - one_hot(labels), in one op (TF's op computes it beside the
// loss as its "backprop" output), with the same bits as those two ops; a label outside [0, C) subtracts
// nothing, as one_hot gives it a zero row (the loss op has checked them). No gradient flows through it: the
// crossentropy's gradient uses it only when no tape records an op on the logits, and the two
// differentiable ops otherwise.
Tensor sparse_softmax_cross_entropy_backprop(const Tensor& labels, const Tensor& logits);

struct Conv2DOptions {
  std::array<int64_t, 2> strides{1, 1};
  std::string padding = "VALID";  // "VALID" or "SAME" (case-insensitive), TF's asymmetric SAME rule
  std::array<int64_t, 2> dilations{1, 1};
};
// input NHWC [N, H, W, C], filters HWIO [kh, kw, C / groups, O]; groups = C / filters.dim(2) (as TF).
Tensor conv2d(const Tensor& input, const Tensor& filters, Conv2DOptions options = {});
// conv2d(input, filters) + bias (shape [O]) as one op, TF's _FusedConv2D with fused_ops [BiasAdd], which its graph
// optimiser makes of the pair; Conv2D layers call it. The bias is added while the output is written, where the
// separate add reads and writes it again. Values as conv2d then add (float32: within the add's rounding).
Tensor conv2d_bias(const Tensor& input, const Tensor& filters, const Tensor& bias, Conv2DOptions options = {});
// relu(conv2d_bias(input, filters, bias)) as one op, _FusedConv2D with fused_ops [BiasAdd, Relu]: what
// Conv2D(activation="relu") runs. Values as the two ops, NaN and infinities included (a -0 may come out as +0);
// float32 applies the relu as oneDNN writes the output, with no pass of its own.
Tensor conv2d_bias_relu(const Tensor& input, const Tensor& filters, const Tensor& bias, Conv2DOptions options = {});
// The gradient of conv2d with respect to its input, of shape input_shape.
Tensor conv2d_backprop_input(const Shape& input_shape, const Tensor& filters, const Tensor& out_backprop,
                             Conv2DOptions options = {});
// The gradient of conv2d with respect to its filters, of shape filter_shape.
Tensor conv2d_backprop_filter(const Tensor& input, const Shape& filter_shape, const Tensor& out_backprop,
                              Conv2DOptions options = {});

struct Pool2DOptions {
  std::array<int64_t, 2> strides{1, 1};
  std::string padding = "VALID";
};
// Max / average over ksize windows of an NHWC input; SAME-padded average counts only real pixels (as TF).
Tensor max_pool2d(const Tensor& input, std::array<int64_t, 2> ksize, Pool2DOptions options = {});
Tensor avg_pool2d(const Tensor& input, std::array<int64_t, 2> ksize, Pool2DOptions options = {});
// Gradients: max pooling routes grad to the first maximum of each window (TF's MaxPoolGrad).
Tensor max_pool2d_grad(const Tensor& orig_input, const Tensor& orig_output, const Tensor& grad,
                       std::array<int64_t, 2> ksize, Pool2DOptions options = {});
Tensor avg_pool2d_grad(const Shape& orig_input_shape, const Tensor& grad, std::array<int64_t, 2> ksize,
                       Pool2DOptions options = {});

}  // namespace ember::ops
