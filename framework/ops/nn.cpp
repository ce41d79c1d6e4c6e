// Front ends of the neural-network ops: validation, TF's VALID/SAME window arithmetic, shape inference.
#include "framework/ops/nn.h"

#include <algorithm>
#include <cctype>

#include "framework/ops/dispatch.h"
#include "framework/ops/index_checks.h"

namespace ember::ops {

namespace {

// One spatial dimension of a windowed op after TF's padding rule (GetWindowedOutputSizeVerbose).
struct Window {
  int64_t out = 0, pad_before = 0, pad_after = 0;
};

Padding parse_padding(const char* op, const std::string& padding) {
  std::string up(padding);
  std::transform(up.begin(), up.end(), up.begin(), [](unsigned char c) { return std::toupper(c); });
  if (up == "VALID") return Padding::Valid;
  if (up == "SAME") return Padding::Same;
  throw make_error<InvalidArgument>(op, ": padding must be \"VALID\" or \"SAME\" (case-insensitive), got \"", padding,
                                    "\"");
}

// TF's rule: SAME gives ceil(in / stride) outputs and puts the odd padding pixel after; VALID pads nothing.
Window resolve_window(const char* op, const char* dim_name, int64_t in, int64_t k, int64_t stride, int64_t dilation,
                      Padding padding) {
  Window w;
  int64_t eff = (k - 1) * dilation + 1;
  if (padding == Padding::Valid) {
    // C++ division truncates toward zero exactly as TF's does, so the edge cases agree.
    w.out = (in - eff + stride) / stride;
  } else {
    w.out = (in + stride - 1) / stride;
    int64_t total = std::max<int64_t>((w.out - 1) * stride + eff - in, 0);
    w.pad_before = total / 2;
    w.pad_after = total - w.pad_before;
  }
  EMBER_CHECK(w.out >= 0, InvalidArgument) << op << ": the computed output " << dim_name << " would be negative: input "
                                           << dim_name << " " << in << " is smaller than the effective window " << eff
                                           << " (window " << k << ", dilation " << dilation << ") with VALID padding";
  return w;
}

void check_floating(const char* op, const Tensor& t, const char* what) {
  EMBER_CHECK(is_floating(t.dtype()), InvalidArgument)
      << op << ": " << what << " must have a floating dtype (float32, float64, float16, bfloat16), got " << t.dtype();
}

void check_same_nn_dtype(const char* op, const Tensor& a, const char* a_name, const Tensor& b, const char* b_name) {
  EMBER_CHECK(a.dtype() == b.dtype(), InvalidArgument)
      << op << ": " << a_name << " and " << b_name << " must have the same dtype, got " << a.dtype() << " and "
      << b.dtype();
}

void check_rank4(const char* op, const Shape& s, const char* what) {
  EMBER_CHECK(s.rank() == 4, InvalidArgument)
      << op << ": " << what << " must have rank 4 (" << (std::string(what) == "filters" ? "HWIO" : "NHWC")
      << "), got shape " << s;
  for (int64_t d : s)
    EMBER_CHECK(d >= 0, InvalidArgument) << op << ": " << what << " shape " << s << " has a negative dimension";
}

void check_pairs(const char* op, const std::array<int64_t, 2>& v, const char* what) {
  EMBER_CHECK(v[0] >= 1 && v[1] >= 1, InvalidArgument)
      << op << ": " << what << " must be >= 1, got [" << v[0] << ", " << v[1] << "]";
}

// Everything conv2d and its two backprops share: checks the input/filter pair and resolves the geometry.
// Returns the attrs and the forward output shape.
std::pair<Conv2DAttrs, Shape> conv_geometry(const char* op, const Shape& input, const Shape& filters,
                                            const Conv2DOptions& o) {
  check_rank4(op, input, "input");
  check_rank4(op, filters, "filters");
  check_pairs(op, o.strides, "strides");
  check_pairs(op, o.dilations, "dilations");
  Padding padding = parse_padding(op, o.padding);
  int64_t c = input[3], fc = filters[2], out_c = filters[3];
  EMBER_CHECK(filters[0] >= 1 && filters[1] >= 1, InvalidArgument)
      << op << ": filters must have a positive spatial size, got filters shape " << filters;
  EMBER_CHECK(fc >= 1 && c >= fc && c % fc == 0, InvalidArgument)
      << op << ": input depth must be a positive multiple of the filter depth (groups = input depth / filter "
      << "depth), got input shape " << input << " and filters shape " << filters;
  int64_t groups = c / fc;
  EMBER_CHECK(out_c % groups == 0, InvalidArgument)
      << op << ": the number of output channels " << out_c << " must be divisible by the number of groups " << groups
      << ", got input shape " << input << " and filters shape " << filters;
  Window h = resolve_window(op, "height", input[1], filters[0], o.strides[0], o.dilations[0], padding);
  Window w = resolve_window(op, "width", input[2], filters[1], o.strides[1], o.dilations[1], padding);
  Conv2DAttrs a;
  a.strides = o.strides;
  a.dilations = o.dilations;
  a.pads = {h.pad_before, h.pad_after, w.pad_before, w.pad_after};
  a.groups = groups;
  a.padding = padding;
  return {a, Shape{input[0], h.out, w.out, out_c}};
}

std::pair<Pool2DAttrs, Shape> pool_geometry(const char* op, const Shape& input, const std::array<int64_t, 2>& ksize,
                                            const Pool2DOptions& o) {
  check_rank4(op, input, "input");
  check_pairs(op, ksize, "ksize");
  check_pairs(op, o.strides, "strides");
  Padding padding = parse_padding(op, o.padding);
  Window h = resolve_window(op, "height", input[1], ksize[0], o.strides[0], 1, padding);
  Window w = resolve_window(op, "width", input[2], ksize[1], o.strides[1], 1, padding);
  Pool2DAttrs a;
  a.ksize = ksize;
  a.strides = o.strides;
  a.pads = {h.pad_before, h.pad_after, w.pad_before, w.pad_after};
  a.padding = padding;
  a.shape = input;
  return {a, Shape{input[0], h.out, w.out, input[3]}};
}

Tensor softmax_like(OpId op, const Tensor& logits, int64_t axis) {
  const char* name = op_name(op);
  check_floating(name, logits, "logits");
  EMBER_CHECK(logits.rank() >= 1, InvalidArgument)
      << name << ": logits must have rank >= 1, got shape " << logits.shape();
  AxisAttrs a{normalize_axis(axis, logits.rank(), name)};
  Tensor inputs[] = {logits};
  return run_op(op, inputs, OutputSpec{logits.shape(), logits.dtype()}, a);
}

}  // namespace

Tensor softmax(const Tensor& logits, int64_t axis) { return softmax_like(OpId::softmax, logits, axis); }

Tensor log_softmax(const Tensor& logits, int64_t axis) { return softmax_like(OpId::log_softmax, logits, axis); }

namespace {
// The crossentropy ops' checks: float logits [..., C], integer labels [...] (in [0, C) when in_range: see
// check_indices_in_range for where and when a GPU's labels are checked).
void check_sparse_xent(const char* op, const Tensor& labels, const Tensor& logits, bool in_range) {
  EMBER_CHECK(logits.dtype() == DType::Float32 || logits.dtype() == DType::Float64, InvalidArgument)
      << op << ": logits must be float32 or float64, got " << logits.dtype() << " (cast them first)";
  detail::check_index_dtype(op, "labels", labels);
  EMBER_CHECK(logits.rank() >= 1, InvalidArgument) << op << ": logits must have rank >= 1, got shape " << logits.shape();
  const int64_t classes = logits.shape()[logits.rank() - 1];
  bool ok = labels.rank() == logits.rank() - 1;
  for (int64_t d = 0; ok && d < labels.rank(); ++d) ok = labels.shape()[d] == logits.shape()[d];
  EMBER_CHECK(ok, InvalidArgument) << op << ": labels of shape " << labels.shape()
                                   << " must have the shape of logits without its last (class) axis; logits have shape "
                                   << logits.shape();
  EMBER_CHECK(classes > 0 || labels.num_elements() == 0, InvalidArgument)
      << op << ": logits of shape " << logits.shape() << " have no classes";
  if (in_range) detail::check_indices_in_range(op, "labels", labels, classes);
}
}  // namespace

Tensor sparse_softmax_cross_entropy_with_logits(const Tensor& labels, const Tensor& logits) {
  check_sparse_xent("sparse_softmax_cross_entropy_with_logits", labels, logits, true);
  Tensor inputs[] = {logits, labels};
  return run_op(OpId::sparse_softmax_cross_entropy_with_logits, inputs, OutputSpec{labels.shape(), logits.dtype()});
}

Tensor sparse_softmax_cross_entropy_backprop(const Tensor& labels, const Tensor& logits) {
  check_sparse_xent("sparse_softmax_cross_entropy_backprop", labels, logits, false);
  Tensor inputs[] = {logits, labels};
  return run_op(OpId::sparse_softmax_cross_entropy_backprop, inputs, OutputSpec{logits.shape(), logits.dtype()});
}

Tensor conv2d(const Tensor& input, const Tensor& filters, Conv2DOptions options) {
  const char* op = "conv2d";
  check_same_nn_dtype(op, input, "input", filters, "filters");
  check_floating(op, input, "input");
  auto [attrs, out_shape] = conv_geometry(op, input.shape(), filters.shape(), options);
  Tensor inputs[] = {input, filters};
  return run_op(OpId::conv2d, inputs, OutputSpec{out_shape, input.dtype()}, attrs);
}

namespace {

Tensor conv2d_bias_op(const char* op, FusedActivation activation, const Tensor& input, const Tensor& filters,
                      const Tensor& bias, const Conv2DOptions& options) {
  check_same_nn_dtype(op, input, "input", filters, "filters");
  check_same_nn_dtype(op, input, "input", bias, "bias");
  check_floating(op, input, "input");
  auto [attrs, out_shape] = conv_geometry(op, input.shape(), filters.shape(), options);
  EMBER_CHECK(bias.rank() == 1 && bias.shape()[0] == out_shape[3], InvalidArgument)
      << op << ": bias must have shape [" << out_shape[3] << "], one value per output channel of filters shape "
      << filters.shape() << ", got " << bias.shape();
  attrs.activation = activation;
  Tensor inputs[] = {input, filters, bias};
  return run_op(OpId::conv2d_bias, inputs, OutputSpec{out_shape, input.dtype()}, attrs);
}

}  // namespace

Tensor conv2d_bias(const Tensor& input, const Tensor& filters, const Tensor& bias, Conv2DOptions options) {
  return conv2d_bias_op("conv2d_bias", FusedActivation::None, input, filters, bias, options);
}

Tensor conv2d_bias_relu(const Tensor& input, const Tensor& filters, const Tensor& bias, Conv2DOptions options) {
  return conv2d_bias_op("conv2d_bias_relu", FusedActivation::Relu, input, filters, bias, options);
}

Tensor conv2d_backprop_input(const Shape& input_shape, const Tensor& filters, const Tensor& out_backprop,
                             Conv2DOptions options) {
  const char* op = "conv2d_backprop_input";
  check_same_nn_dtype(op, filters, "filters", out_backprop, "out_backprop");
  check_floating(op, filters, "filters");
  auto [attrs, out_shape] = conv_geometry(op, input_shape, filters.shape(), options);
  EMBER_CHECK(out_backprop.shape() == out_shape, InvalidArgument)
      << op << ": out_backprop has shape " << out_backprop.shape() << " but the convolution of input shape "
      << input_shape << " with filters shape " << filters.shape() << " produces " << out_shape;
  attrs.shape = input_shape;
  Tensor inputs[] = {filters, out_backprop};
  return run_op(OpId::conv2d_backprop_input, inputs, OutputSpec{input_shape, filters.dtype()}, attrs);
}

Tensor conv2d_backprop_filter(const Tensor& input, const Shape& filter_shape, const Tensor& out_backprop,
                              Conv2DOptions options) {
  const char* op = "conv2d_backprop_filter";
  check_same_nn_dtype(op, input, "input", out_backprop, "out_backprop");
  check_floating(op, input, "input");
  auto [attrs, out_shape] = conv_geometry(op, input.shape(), filter_shape, options);
  EMBER_CHECK(out_backprop.shape() == out_shape, InvalidArgument)
      << op << ": out_backprop has shape " << out_backprop.shape() << " but the convolution of input shape "
      << input.shape() << " with filters shape " << filter_shape << " produces " << out_shape;
  attrs.shape = filter_shape;
  Tensor inputs[] = {input, out_backprop};
  return run_op(OpId::conv2d_backprop_filter, inputs, OutputSpec{filter_shape, input.dtype()}, attrs);
}

Tensor max_pool2d(const Tensor& input, std::array<int64_t, 2> ksize, Pool2DOptions options) {
  check_floating("max_pool2d", input, "input");
  auto [attrs, out_shape] = pool_geometry("max_pool2d", input.shape(), ksize, options);
  Tensor inputs[] = {input};
  return run_op(OpId::max_pool2d, inputs, OutputSpec{out_shape, input.dtype()}, attrs);
}

Tensor avg_pool2d(const Tensor& input, std::array<int64_t, 2> ksize, Pool2DOptions options) {
  check_floating("avg_pool2d", input, "input");
  auto [attrs, out_shape] = pool_geometry("avg_pool2d", input.shape(), ksize, options);
  Tensor inputs[] = {input};
  return run_op(OpId::avg_pool2d, inputs, OutputSpec{out_shape, input.dtype()}, attrs);
}

Tensor max_pool2d_grad(const Tensor& orig_input, const Tensor& orig_output, const Tensor& grad,
                       std::array<int64_t, 2> ksize, Pool2DOptions options) {
  const char* op = "max_pool2d_grad";
  check_same_nn_dtype(op, orig_input, "orig_input", orig_output, "orig_output");
  check_same_nn_dtype(op, orig_input, "orig_input", grad, "grad");
  check_floating(op, orig_input, "orig_input");
  auto [attrs, out_shape] = pool_geometry(op, orig_input.shape(), ksize, options);
  EMBER_CHECK(orig_output.shape() == out_shape, InvalidArgument)
      << op << ": orig_output has shape " << orig_output.shape() << " but pooling input shape " << orig_input.shape()
      << " produces " << out_shape;
  EMBER_CHECK(grad.shape() == out_shape, InvalidArgument)
      << op << ": grad has shape " << grad.shape() << " but pooling input shape " << orig_input.shape() << " produces "
      << out_shape;
  Tensor inputs[] = {orig_input, orig_output, grad};
  return run_op(OpId::max_pool2d_grad, inputs, OutputSpec{orig_input.shape(), orig_input.dtype()}, attrs);
}

Tensor avg_pool2d_grad(const Shape& orig_input_shape, const Tensor& grad, std::array<int64_t, 2> ksize,
                       Pool2DOptions options) {
  const char* op = "avg_pool2d_grad";
  check_floating(op, grad, "grad");
  auto [attrs, out_shape] = pool_geometry(op, orig_input_shape, ksize, options);
  EMBER_CHECK(grad.shape() == out_shape, InvalidArgument)
      << op << ": grad has shape " << grad.shape() << " but pooling input shape " << orig_input_shape << " produces "
      << out_shape;
  Tensor inputs[] = {grad};
  return run_op(OpId::avg_pool2d_grad, inputs, OutputSpec{orig_input_shape, grad.dtype()}, attrs);
}

}  // namespace ember::ops
