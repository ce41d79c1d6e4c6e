#include "layers/conv1d.h"

#include "framework/core/config_reader.h"
#include "framework/model/activations.h"
#include "framework/ops/array.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/nn.h"

namespace ember::layers {

using ::ember::detail::config_int;
using ::ember::detail::config_required_int;

using conv_utils::who;

Conv1D::Conv1D(int64_t filters, int64_t kernel_size, Conv1DOptions options)
    : Layer("conv1d", {options.name, options.dtype, options.trainable}),
      filters_(filters),
      kernel_size_(kernel_size),
      options_(std::move(options)) {
  const std::string w = who(*this);
  EMBER_CHECK(filters > 0, InvalidArgument) << w << ": filters must be positive, got " << filters;
  conv_utils::check_size1(kernel_size_, 1, w, "kernel_size");
  conv_utils::check_size1(options_.strides, 1, w, "strides");
  conv_utils::check_size1(options_.dilation_rate, 1, w, "dilation_rate");
  EMBER_CHECK(options_.strides == 1 || options_.dilation_rate == 1, InvalidArgument)
      << w << ": strides > 1 are not supported together with dilation_rate > 1, got strides " << options_.strides
      << " and dilation_rate " << options_.dilation_rate;
  EMBER_CHECK(options_.groups >= 1 && filters % options_.groups == 0, InvalidArgument)
      << w << ": the number of filters must be a multiple of groups (>= 1), got filters " << filters << " and groups "
      << options_.groups;
  options_.padding = conv_utils::standardize_padding(options_.padding, w, /*allow_causal=*/true);
  options_.data_format = conv_utils::standardize_data_format(options_.data_format, w);
  activations::get(options_.activation);  // an unknown name fails here, not at the first call
}

void Conv1D::build(const Shape& input_shape) {
  const std::string w = who(*this);
  conv_utils::check_rank3(input_shape, w);
  const int64_t in = input_shape[2];
  EMBER_CHECK(in > 0, InvalidArgument) << w << ": the channel dimension of the input must be known, got shape "
                                       << input_shape;
  EMBER_CHECK(in % options_.groups == 0, InvalidArgument)
      << w << ": the number of input channels must be a multiple of groups " << options_.groups << ", got shape "
      << input_shape;
  compute_output_shape(input_shape);  // Keras builds only for inputs long enough for one window
  kernel_ = add_weight("kernel", {kernel_size_, in / options_.groups, filters_}, options_.kernel_initializer, true,
                       options_.kernel_regularizer);
  if (options_.use_bias)
    bias_ = add_weight("bias", {filters_}, options_.bias_initializer, true, options_.bias_regularizer);
}

void Conv1D::check_input_shape(const std::vector<Shape>& shapes) const {
  const int64_t in = kernel_.shape()[1] * options_.groups;
  EMBER_CHECK(shapes.size() == 1 && shapes[0].rank() == 3 && shapes[0][2] == in, InvalidArgument)
      << who(*this) << ": expected an input of shape (batch, steps, " << in << "), got "
      << (shapes.size() == 1 ? shapes[0].to_string() : std::to_string(shapes.size()) + " inputs");
}

Shape Conv1D::compute_output_shape(const Shape& input_shape) {
  return conv_utils::windowed_output_shape_1d(input_shape, filters_, kernel_size_, options_.strides,
                                              options_.dilation_rate, options_.padding, 1, who(*this));
}

Tensor Conv1D::call(const Tensor& x, bool training) {
  compute_output_shape(x.shape());  // a too-short input is an error naming this layer, not the op
  Tensor in = x;
  std::string padding = options_.padding;
  if (padding == "causal") {  // Keras pads the input itself, then convolves with "valid"
    in = ops::pad(in, {{0, 0}, {options_.dilation_rate * (kernel_size_ - 1), 0}, {0, 0}});
    padding = "valid";
  }
  // TF's conv1d: a 2-D convolution over (batch, 1, steps, channels) with a (1, k, in, out) kernel.
  in = ops::expand_dims(in, 1);
  Tensor k = ops::expand_dims(read(kernel_), 0);
  const ops::Conv2DOptions conv{.strides = {1, options_.strides},
                                .padding = padding,
                                .dilations = {1, options_.dilation_rate}};
  if (options_.use_bias && options_.activation == "relu")
    return ops::squeeze(ops::conv2d_bias_relu(in, k, read(bias_), conv), {1});
  Tensor y = options_.use_bias ? ops::conv2d_bias(in, k, read(bias_), conv) : ops::conv2d(in, k, conv);
  return activations::get(options_.activation)(ops::squeeze(y, {1}));
}

nlohmann::json Conv1D::get_config() const {
  nlohmann::json c = base_config();
  conv_utils::write_conv_config(c, options_, conv_utils::kernel_and_bias_keys<Conv1DOptions>());
  c["filters"] = filters_;
  c["kernel_size"] = conv_utils::size_to_json(kernel_size_);
  c["groups"] = options_.groups;
  return c;
}

LayerPtr Conv1D::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const std::string w = "Conv1D '" + base.name + "'";
  Conv1DOptions o = conv_utils::read_conv_config(c, base, w, conv_utils::kernel_and_bias_keys<Conv1DOptions>());
  o.groups = config_int(c, "groups", 1, w);
  EMBER_CHECK(c.contains("kernel_size"), InvalidArgument) << w << ": config key \"kernel_size\" is missing";
  return std::make_shared<Conv1D>(config_required_int(c, "filters", w),
                                  conv_utils::size1_from_json(c["kernel_size"], w, "kernel_size"), o);
}

EMBER_REGISTER_LAYER(Conv1D);

}  // namespace ember::layers
