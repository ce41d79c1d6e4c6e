#include "layers/depthwise_conv2d.h"

#include "framework/core/config_reader.h"
#include "framework/model/activations.h"
#include "framework/ops/array.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/nn.h"

namespace ember::layers {

using ::ember::detail::config_int;

using conv_utils::who;

DepthwiseConv2D::DepthwiseConv2D(Size2 kernel_size, DepthwiseConv2DOptions options)
    : Layer("depthwise_conv2d", {options.name, options.dtype, options.trainable}),
      kernel_size_(kernel_size),
      options_(std::move(options)) {
  const std::string w = who(*this);
  conv_utils::check_size2(kernel_size_, 1, w, "kernel_size");
  conv_utils::check_size2(options_.strides, 1, w, "strides");
  conv_utils::check_size2(options_.dilation_rate, 1, w, "dilation_rate");
  EMBER_CHECK(options_.depth_multiplier > 0, InvalidArgument)
      << w << ": depth_multiplier must be positive, got " << options_.depth_multiplier;
  // TF's depthwise_conv2d rejects the combination when called; failing here is earlier and clearer.
  EMBER_CHECK((options_.strides.h == 1 && options_.strides.w == 1) ||
                  (options_.dilation_rate.h == 1 && options_.dilation_rate.w == 1),
              InvalidArgument)
      << w << ": strides > 1 are not supported together with dilation_rate > 1, got strides " << options_.strides
      << " and dilation_rate " << options_.dilation_rate;
  options_.padding = conv_utils::standardize_padding(options_.padding, w);
  options_.data_format = conv_utils::standardize_data_format(options_.data_format, w);
  activations::get(options_.activation);
}

void DepthwiseConv2D::build(const Shape& input_shape) {
  const std::string w = who(*this);
  conv_utils::check_rank4(input_shape, w);
  const int64_t in = input_shape[3];
  EMBER_CHECK(in > 0, InvalidArgument) << w << ": the channel dimension of the input must be known, got shape "
                                       << input_shape;
  kernel_ = add_weight("kernel", {kernel_size_.h, kernel_size_.w, in, options_.depth_multiplier},
                       options_.depthwise_initializer, true, options_.depthwise_regularizer);
  if (options_.use_bias)
    bias_ = add_weight("bias", {in * options_.depth_multiplier}, options_.bias_initializer, true,
                       options_.bias_regularizer);
}

void DepthwiseConv2D::check_input_shape(const std::vector<Shape>& shapes) const {
  const int64_t in = kernel_.shape()[2];
  EMBER_CHECK(shapes.size() == 1 && shapes[0].rank() == 4 && shapes[0][3] == in, InvalidArgument)
      << who(*this) << ": expected an input of shape (batch, height, width, " << in << "), got "
      << (shapes.size() == 1 ? shapes[0].to_string() : std::to_string(shapes.size()) + " inputs");
}

Shape DepthwiseConv2D::compute_output_shape(const Shape& input_shape) {
  conv_utils::check_rank4(input_shape, who(*this));
  const int64_t channels = input_shape[3] < 0 ? -1 : input_shape[3] * options_.depth_multiplier;
  return conv_utils::windowed_output_shape(input_shape, channels, kernel_size_, options_.strides,
                                           options_.dilation_rate, options_.padding, 1, who(*this));
}

Tensor DepthwiseConv2D::call(const Tensor& x, bool training) {
  compute_output_shape(x.shape());
  // (kh, kw, in, mult) and (kh, kw, 1, in * mult) share one row-major buffer, and conv2d's grouped output
  // channel g * mult + m is exactly depthwise's c * mult + m, so a view makes it a grouped convolution.
  const Shape& k = kernel_.shape();
  Tensor filters = ops::reshape(read(kernel_), {k[0], k[1], 1, k[2] * k[3]});
  const ops::Conv2DOptions conv{.strides = options_.strides.array(),
                                .padding = options_.padding,
                                .dilations = options_.dilation_rate.array()};
  Tensor y = options_.use_bias ? ops::conv2d_bias(x, filters, read(bias_), conv) : ops::conv2d(x, filters, conv);
  return activations::get(options_.activation)(y);
}

namespace {

// depthwise_* and bias_*, in Keras's order.
constexpr std::array<conv_utils::ConvWeightKeys<DepthwiseConv2DOptions>, 2> kDepthwiseWeightKeys{{
    {"depthwise", &DepthwiseConv2DOptions::depthwise_initializer, &DepthwiseConv2DOptions::depthwise_regularizer},
    {"bias", &DepthwiseConv2DOptions::bias_initializer, &DepthwiseConv2DOptions::bias_regularizer},
}};

}  // namespace

nlohmann::json DepthwiseConv2D::get_config() const {
  nlohmann::json c = base_config();
  conv_utils::write_conv_config(c, options_, kDepthwiseWeightKeys);
  c["kernel_size"] = kernel_size_.to_json();
  c["depth_multiplier"] = options_.depth_multiplier;
  return c;
}

LayerPtr DepthwiseConv2D::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const std::string w = "DepthwiseConv2D '" + base.name + "'";
  DepthwiseConv2DOptions o = conv_utils::read_conv_config(c, base, w, kDepthwiseWeightKeys);
  o.depth_multiplier = config_int(c, "depth_multiplier", 1, w);
  return std::make_shared<DepthwiseConv2D>(conv_utils::size2_from_json(c.at("kernel_size"), w, "kernel_size"), o);
}

EMBER_REGISTER_LAYER(DepthwiseConv2D);

}  // namespace ember::layers
