#include "layers/conv2d_transpose.h"

#include <algorithm>

#include "framework/core/config_reader.h"
#include "framework/model/activations.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/nn.h"

namespace ember::layers {

using ::ember::detail::config_required_int;

using conv_utils::who;

namespace {

// Keras's output length (backend_utils._get_output_shape_given_tf_padding); -1 stays -1.
int64_t transpose_length(int64_t in, int64_t kernel, int64_t stride, int64_t dilation, const std::string& padding,
                         std::optional<int64_t> output_padding) {
  if (in < 0) return -1;
  const int64_t k = (kernel - 1) * dilation + 1;
  if (padding == "valid") return (in - 1) * stride + k + output_padding.value_or(std::max(k, stride) - k);
  return output_padding ? (in - 1) * stride + k % 2 + *output_padding : in * stride;
}

}  // namespace

Conv2DTranspose::Conv2DTranspose(int64_t filters, Size2 kernel_size, Conv2DTransposeOptions options)
    : Layer("conv2d_transpose", {options.name, options.dtype, options.trainable}),
      filters_(filters),
      kernel_size_(kernel_size),
      options_(std::move(options)) {
  const std::string w = who(*this);
  EMBER_CHECK(filters > 0, InvalidArgument) << w << ": filters must be positive, got " << filters;
  conv_utils::check_size2(kernel_size_, 1, w, "kernel_size");
  conv_utils::check_size2(options_.strides, 1, w, "strides");
  conv_utils::check_size2(options_.dilation_rate, 1, w, "dilation_rate");
  EMBER_CHECK((options_.strides.h == 1 && options_.strides.w == 1) ||
                  (options_.dilation_rate.h == 1 && options_.dilation_rate.w == 1),
              InvalidArgument)
      << w << ": strides > 1 are not supported together with dilation_rate > 1, got strides " << options_.strides
      << " and dilation_rate " << options_.dilation_rate;
  if (options_.output_padding) {
    const Size2& op = *options_.output_padding;
    EMBER_CHECK(op.h >= 0 && op.w >= 0 && op.h < options_.strides.h && op.w < options_.strides.w, InvalidArgument)
        << w << ": output_padding must be >= 0 and strictly less than strides " << options_.strides << ", got " << op;
  }
  options_.padding = conv_utils::standardize_padding(options_.padding, w);
  options_.data_format = conv_utils::standardize_data_format(options_.data_format, w);
  activations::get(options_.activation);
}

void Conv2DTranspose::build(const Shape& input_shape) {
  const std::string w = who(*this);
  conv_utils::check_rank4(input_shape, w);
  const int64_t in = input_shape[3];
  EMBER_CHECK(in > 0, InvalidArgument) << w << ": the channel dimension of the input must be known, got shape "
                                       << input_shape;
  kernel_ = add_weight("kernel", {kernel_size_.h, kernel_size_.w, filters_, in}, options_.kernel_initializer, true,
                       options_.kernel_regularizer);
  if (options_.use_bias)
    bias_ = add_weight("bias", {filters_}, options_.bias_initializer, true, options_.bias_regularizer);
}

void Conv2DTranspose::check_input_shape(const std::vector<Shape>& shapes) const {
  const int64_t in = kernel_.shape()[3];
  EMBER_CHECK(shapes.size() == 1 && shapes[0].rank() == 4 && shapes[0][3] == in, InvalidArgument)
      << who(*this) << ": expected an input of shape (batch, height, width, " << in << "), got "
      << (shapes.size() == 1 ? shapes[0].to_string() : std::to_string(shapes.size()) + " inputs");
}

Shape Conv2DTranspose::compute_output_shape(const Shape& s) {
  const std::string w = who(*this);
  conv_utils::check_rank4(s, w);
  const auto& op = options_.output_padding;
  const int64_t oh = transpose_length(s[1], kernel_size_.h, options_.strides.h, options_.dilation_rate.h,
                                      options_.padding, op ? std::optional<int64_t>(op->h) : std::nullopt);
  const int64_t ow = transpose_length(s[2], kernel_size_.w, options_.strides.w, options_.dilation_rate.w,
                                      options_.padding, op ? std::optional<int64_t>(op->w) : std::nullopt);
  // TF convolves the output shape forward and requires the input's size back (with "same" and an even kernel,
  // an output_padding can make the output one row short of it).
  const int64_t bh = conv_utils::output_length(oh, kernel_size_.h, options_.strides.h, options_.dilation_rate.h,
                                               options_.padding);
  const int64_t bw = conv_utils::output_length(ow, kernel_size_.w, options_.strides.w, options_.dilation_rate.w,
                                               options_.padding);
  EMBER_CHECK(bh == s[1] && bw == s[2] && (s[1] < 0 || oh > 0) && (s[2] < 0 || ow > 0), InvalidArgument)
      << w << ": input shape " << s << " gives an output of (" << oh << ", " << ow << ") whose convolution with kernel "
      << kernel_size_ << ", strides " << options_.strides << ", padding \"" << options_.padding
      << "\" has spatial size (" << bh << ", " << bw << "), not the input's; change output_padding";
  return Shape{s[0], oh, ow, filters_};
}

Tensor Conv2DTranspose::call(const Tensor& x, bool training) {
  const Shape out = compute_output_shape(x.shape());
  const ops::Conv2DOptions conv{.strides = options_.strides.array(),
                                .padding = options_.padding,
                                .dilations = options_.dilation_rate.array()};
  Tensor y = ops::conv2d_backprop_input(out, read(kernel_), x, conv);
  if (options_.use_bias) y = y + read(bias_);
  return activations::get(options_.activation)(y);
}

nlohmann::json Conv2DTranspose::get_config() const {
  nlohmann::json c = base_config();
  conv_utils::write_conv_config(c, options_, conv_utils::kernel_and_bias_keys<Conv2DTransposeOptions>());
  c["filters"] = filters_;
  c["kernel_size"] = kernel_size_.to_json();
  c["output_padding"] = options_.output_padding ? options_.output_padding->to_json() : nlohmann::json(nullptr);
  return c;
}

LayerPtr Conv2DTranspose::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const std::string w = "Conv2DTranspose '" + base.name + "'";
  Conv2DTransposeOptions o =
      conv_utils::read_conv_config(c, base, w, conv_utils::kernel_and_bias_keys<Conv2DTransposeOptions>());
  if (c.contains("output_padding") && !c["output_padding"].is_null())
    o.output_padding = conv_utils::size2_from_json(c["output_padding"], w, "output_padding");
  EMBER_CHECK(c.contains("kernel_size"), InvalidArgument) << w << ": config key \"kernel_size\" is missing";
  return std::make_shared<Conv2DTranspose>(config_required_int(c, "filters", w),
                                           conv_utils::size2_from_json(c["kernel_size"], w, "kernel_size"), o);
}

EMBER_REGISTER_LAYER(Conv2DTranspose);

}  // namespace ember::layers
