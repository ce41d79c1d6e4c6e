#include "layers/separable_conv2d.h"

#include "framework/core/config_reader.h"
#include "framework/model/activations.h"
#include "framework/ops/array.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/nn.h"

namespace ember::layers {

using ::ember::detail::config_int;
using ::ember::detail::config_required_int;

using conv_utils::who;

SeparableConv2D::SeparableConv2D(int64_t filters, Size2 kernel_size, SeparableConv2DOptions options)
    : Layer("separable_conv2d", {options.name, options.dtype, options.trainable}),
      filters_(filters),
      kernel_size_(kernel_size),
      options_(std::move(options)) {
  const std::string w = who(*this);
  EMBER_CHECK(filters > 0, InvalidArgument) << w << ": filters must be positive, got " << filters;
  EMBER_CHECK(options_.depth_multiplier > 0, InvalidArgument)
      << w << ": depth_multiplier must be positive, got " << options_.depth_multiplier;
  conv_utils::check_size2(kernel_size_, 1, w, "kernel_size");
  conv_utils::check_size2(options_.strides, 1, w, "strides");
  conv_utils::check_size2(options_.dilation_rate, 1, w, "dilation_rate");
  // strides > 1 with dilation_rate > 1 is allowed, as in Keras 3 (which runs the dilated convolution at stride 1
  // and subsamples: the same values ops::conv2d computes directly).
  options_.padding = conv_utils::standardize_padding(options_.padding, w);
  options_.data_format = conv_utils::standardize_data_format(options_.data_format, w);
  activations::get(options_.activation);
}

void SeparableConv2D::build(const Shape& input_shape) {
  const std::string w = who(*this);
  conv_utils::check_rank4(input_shape, w);
  const int64_t in = input_shape[3];
  EMBER_CHECK(in > 0, InvalidArgument) << w << ": the channel dimension of the input must be known, got shape "
                                       << input_shape;
  compute_output_shape(input_shape);  // Keras builds only for inputs large enough for one window
  const int64_t mult = options_.depth_multiplier;
  depthwise_kernel_ = add_weight("depthwise_kernel", {kernel_size_.h, kernel_size_.w, in, mult},
                                 options_.depthwise_initializer, true, options_.depthwise_regularizer);
  pointwise_kernel_ = add_weight("pointwise_kernel", {1, 1, in * mult, filters_}, options_.pointwise_initializer, true,
                                 options_.pointwise_regularizer);
  if (options_.use_bias)
    bias_ = add_weight("bias", {filters_}, options_.bias_initializer, true, options_.bias_regularizer);
}

void SeparableConv2D::check_input_shape(const std::vector<Shape>& shapes) const {
  const int64_t in = depthwise_kernel_.shape()[2];
  EMBER_CHECK(shapes.size() == 1 && shapes[0].rank() == 4 && shapes[0][3] == in, InvalidArgument)
      << who(*this) << ": expected an input of shape (batch, height, width, " << in << "), got "
      << (shapes.size() == 1 ? shapes[0].to_string() : std::to_string(shapes.size()) + " inputs");
}

Shape SeparableConv2D::compute_output_shape(const Shape& input_shape) {
  return conv_utils::windowed_output_shape(input_shape, filters_, kernel_size_, options_.strides,
                                           options_.dilation_rate, options_.padding, 1, who(*this));
}

Tensor SeparableConv2D::call(const Tensor& x, bool training) {
  compute_output_shape(x.shape());
  // The depthwise step is DepthwiseConv2D's grouped convolution (see depthwise_conv2d.cpp for the layout).
  const Shape& k = depthwise_kernel_.shape();
  Tensor depthwise = ops::reshape(read(depthwise_kernel_), {k[0], k[1], 1, k[2] * k[3]});
  Tensor h = ops::conv2d(x, depthwise,
                         {.strides = options_.strides.array(),
                          .padding = options_.padding,
                          .dilations = options_.dilation_rate.array()});
  Tensor pointwise = read(pointwise_kernel_);
  if (options_.use_bias && options_.activation == "relu") return ops::conv2d_bias_relu(h, pointwise, read(bias_));
  Tensor y = options_.use_bias ? ops::conv2d_bias(h, pointwise, read(bias_)) : ops::conv2d(h, pointwise);
  return activations::get(options_.activation)(y);
}

namespace {

// depthwise_*, pointwise_* and bias_*, in Keras's order.
constexpr std::array<conv_utils::ConvWeightKeys<SeparableConv2DOptions>, 3> kSeparableWeightKeys{{
    {"depthwise", &SeparableConv2DOptions::depthwise_initializer, &SeparableConv2DOptions::depthwise_regularizer},
    {"pointwise", &SeparableConv2DOptions::pointwise_initializer, &SeparableConv2DOptions::pointwise_regularizer},
    {"bias", &SeparableConv2DOptions::bias_initializer, &SeparableConv2DOptions::bias_regularizer},
}};

}  // namespace

nlohmann::json SeparableConv2D::get_config() const {
  nlohmann::json c = base_config();
  conv_utils::write_conv_config(c, options_, kSeparableWeightKeys);
  c["depth_multiplier"] = options_.depth_multiplier;
  c["filters"] = filters_;
  c["kernel_size"] = kernel_size_.to_json();
  return c;
}

LayerPtr SeparableConv2D::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const std::string w = "SeparableConv2D '" + base.name + "'";
  SeparableConv2DOptions o = conv_utils::read_conv_config(c, base, w, kSeparableWeightKeys);
  o.depth_multiplier = config_int(c, "depth_multiplier", 1, w);
  EMBER_CHECK(c.contains("kernel_size"), InvalidArgument) << w << ": config key \"kernel_size\" is missing";
  return std::make_shared<SeparableConv2D>(config_required_int(c, "filters", w),
                                           conv_utils::size2_from_json(c["kernel_size"], w, "kernel_size"), o);
}

EMBER_REGISTER_LAYER(SeparableConv2D);

}  // namespace ember::layers
