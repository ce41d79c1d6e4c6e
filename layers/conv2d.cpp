#include "layers/conv2d.h"

#include "framework/core/config_reader.h"
#include "framework/model/activations.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/nn.h"

namespace ember::layers {

using ::ember::detail::config_int;
using ::ember::detail::config_required_int;

using conv_utils::who;

Conv2D::Conv2D(int64_t filters, Size2 kernel_size, Conv2DOptions options)
    : Layer("conv2d", {options.name, options.dtype, options.trainable}),
      filters_(filters),
      kernel_size_(kernel_size),
      options_(std::move(options)) {
  const std::string w = who(*this);
  EMBER_CHECK(filters > 0, InvalidArgument) << w << ": filters must be positive, got " << filters;
  conv_utils::check_size2(kernel_size_, 1, w, "kernel_size");
  conv_utils::check_size2(options_.strides, 1, w, "strides");
  conv_utils::check_size2(options_.dilation_rate, 1, w, "dilation_rate");
  // TF's conv2d rejects the combination; Keras checks it in the constructor.
  EMBER_CHECK((options_.strides.h == 1 && options_.strides.w == 1) ||
                  (options_.dilation_rate.h == 1 && options_.dilation_rate.w == 1),
              InvalidArgument)
      << w << ": strides > 1 are not supported together with dilation_rate > 1, got strides " << options_.strides
      << " and dilation_rate " << options_.dilation_rate;
  EMBER_CHECK(options_.groups >= 1 && filters % options_.groups == 0, InvalidArgument)
      << w << ": the number of filters must be a multiple of groups (>= 1), got filters " << filters << " and groups "
      << options_.groups;
  options_.padding = conv_utils::standardize_padding(options_.padding, w);
  options_.data_format = conv_utils::standardize_data_format(options_.data_format, w);
  activations::get(options_.activation);  // an unknown name fails here, not at the first call
}

void Conv2D::build(const Shape& input_shape) {
  const std::string w = who(*this);
  conv_utils::check_rank4(input_shape, w);
  const int64_t in = input_shape[3];
  EMBER_CHECK(in > 0, InvalidArgument) << w << ": the channel dimension of the input must be known, got shape "
                                       << input_shape;
  EMBER_CHECK(in % options_.groups == 0, InvalidArgument)
      << w << ": the number of input channels must be a multiple of groups " << options_.groups << ", got shape "
      << input_shape;
  kernel_ = add_weight("kernel", {kernel_size_.h, kernel_size_.w, in / options_.groups, filters_},
                       options_.kernel_initializer, true, options_.kernel_regularizer);
  if (options_.use_bias)
    bias_ = add_weight("bias", {filters_}, options_.bias_initializer, true, options_.bias_regularizer);
}

// Keras's input spec: rank 4 with the channel count the kernel was built for; height and width may change.
void Conv2D::check_input_shape(const std::vector<Shape>& shapes) const {
  const int64_t in = kernel_.shape()[2] * options_.groups;
  EMBER_CHECK(shapes.size() == 1 && shapes[0].rank() == 4 && shapes[0][3] == in, InvalidArgument)
      << who(*this) << ": expected an input of shape (batch, height, width, " << in << "), got "
      << (shapes.size() == 1 ? shapes[0].to_string() : std::to_string(shapes.size()) + " inputs");
}

Shape Conv2D::compute_output_shape(const Shape& input_shape) {
  return conv_utils::windowed_output_shape(input_shape, filters_, kernel_size_, options_.strides,
                                           options_.dilation_rate, options_.padding, 1, who(*this));
}

Tensor Conv2D::call(const Tensor& x, bool training) {
  compute_output_shape(x.shape());  // a too-small input is an error naming this layer, not the op
  const ops::Conv2DOptions conv{.strides = options_.strides.array(),
                                .padding = options_.padding,
                                .dilations = options_.dilation_rate.array()};
  // Convolution, bias and relu are one op, as TF's graph optimiser fuses Conv2D, BiasAdd and Relu.
  if (options_.use_bias && options_.activation == "relu")
    return ops::conv2d_bias_relu(x, read(kernel_), read(bias_), conv);
  Tensor y = options_.use_bias ? ops::conv2d_bias(x, read(kernel_), read(bias_), conv)
                               : ops::conv2d(x, read(kernel_), conv);
  return activations::get(options_.activation)(y);
}

nlohmann::json Conv2D::get_config() const {
  nlohmann::json c = base_config();
  conv_utils::write_conv_config(c, options_, conv_utils::kernel_and_bias_keys<Conv2DOptions>());
  c["filters"] = filters_;
  c["kernel_size"] = kernel_size_.to_json();
  c["groups"] = options_.groups;
  return c;
}

LayerPtr Conv2D::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const std::string w = "Conv2D '" + base.name + "'";
  Conv2DOptions o = conv_utils::read_conv_config(c, base, w, conv_utils::kernel_and_bias_keys<Conv2DOptions>());
  o.groups = config_int(c, "groups", 1, w);
  return std::make_shared<Conv2D>(config_required_int(c, "filters", w),
                                  conv_utils::size2_from_json(c.at("kernel_size"), w, "kernel_size"), o);
}

EMBER_REGISTER_LAYER(Conv2D);

}  // namespace ember::layers
