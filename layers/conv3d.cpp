#include "layers/conv3d.h"

#include <algorithm>

#include "framework/core/config_reader.h"
#include "framework/model/activations.h"
#include "framework/ops/array.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/nn.h"

namespace ember::layers {

using ::ember::detail::config_int;
using ::ember::detail::config_required_int;

using conv_utils::who;

Conv3D::Conv3D(int64_t filters, Size3 kernel_size, Conv3DOptions options)
    : Layer("conv3d", {options.name, options.dtype, options.trainable}),
      filters_(filters),
      kernel_size_(kernel_size),
      options_(std::move(options)) {
  const std::string w = who(*this);
  EMBER_CHECK(filters > 0, InvalidArgument) << w << ": filters must be positive, got " << filters;
  conv_utils::check_size3(kernel_size_, 1, w, "kernel_size");
  conv_utils::check_size3(options_.strides, 1, w, "strides");
  conv_utils::check_size3(options_.dilation_rate, 1, w, "dilation_rate");
  EMBER_CHECK(options_.strides == Size3(1) || options_.dilation_rate == Size3(1), InvalidArgument)
      << w << ": strides > 1 are not supported together with dilation_rate > 1, got strides " << options_.strides
      << " and dilation_rate " << options_.dilation_rate;
  EMBER_CHECK(options_.groups >= 1 && filters % options_.groups == 0, InvalidArgument)
      << w << ": the number of filters must be a multiple of groups (>= 1), got filters " << filters << " and groups "
      << options_.groups;
  options_.padding = conv_utils::standardize_padding(options_.padding, w);
  options_.data_format = conv_utils::standardize_data_format(options_.data_format, w);
  activations::get(options_.activation);
}

void Conv3D::build(const Shape& input_shape) {
  const std::string w = who(*this);
  compute_output_shape(input_shape);  // the rank, and an input large enough for one window (as Keras's build)
  const int64_t in = input_shape[4];
  EMBER_CHECK(in > 0, InvalidArgument) << w << ": the channel dimension of the input must be known, got shape "
                                       << input_shape;
  EMBER_CHECK(in % options_.groups == 0, InvalidArgument)
      << w << ": the number of input channels must be a multiple of groups " << options_.groups << ", got shape "
      << input_shape;
  kernel_ = add_weight("kernel", {kernel_size_.d, kernel_size_.h, kernel_size_.w, in / options_.groups, filters_},
                       options_.kernel_initializer, true, options_.kernel_regularizer);
  if (options_.use_bias)
    bias_ = add_weight("bias", {filters_}, options_.bias_initializer, true, options_.bias_regularizer);
}

void Conv3D::check_input_shape(const std::vector<Shape>& shapes) const {
  const int64_t in = kernel_.shape()[3] * options_.groups;
  EMBER_CHECK(shapes.size() == 1 && shapes[0].rank() == 5 && shapes[0][4] == in, InvalidArgument)
      << who(*this) << ": expected an input of shape (batch, depth, height, width, " << in << "), got "
      << (shapes.size() == 1 ? shapes[0].to_string() : std::to_string(shapes.size()) + " inputs");
}

Shape Conv3D::compute_output_shape(const Shape& s) {
  const std::string w = who(*this);
  EMBER_CHECK(s.rank() == 5, InvalidArgument)
      << w << ": expected a rank-5 input (batch, depth, height, width, channels), got shape " << s;
  const Size3& k = kernel_size_;
  const Size3& st = options_.strides;
  const Size3& dl = options_.dilation_rate;
  const int64_t od = conv_utils::output_length(s[1], k.d, st.d, dl.d, options_.padding);
  const int64_t oh = conv_utils::output_length(s[2], k.h, st.h, dl.h, options_.padding);
  const int64_t ow = conv_utils::output_length(s[3], k.w, st.w, dl.w, options_.padding);
  EMBER_CHECK((s[1] < 0 || od >= 1) && (s[2] < 0 || oh >= 1) && (s[3] < 0 || ow >= 1), InvalidArgument)
      << w << ": the computed output size would be (" << od << ", " << oh << ", " << ow << ") for input shape " << s
      << ", kernel " << k << ", strides " << st << ", dilation_rate " << dl << ", padding \"" << options_.padding
      << "\"; the input is too small";
  return Shape{s[0], od, oh, ow, filters_};
}

Tensor Conv3D::call(const Tensor& x, bool training) {
  const Shape out = compute_output_shape(x.shape());
  const Shape& s = x.shape();
  const Size3& k = kernel_size_;
  const int64_t sd = options_.strides.d, dd = options_.dilation_rate.d;
  Tensor in = x;
  if (options_.padding == "same") {  // TF's SAME rule along the depth; height and width are conv2d's
    const int64_t total = std::max<int64_t>((out[1] - 1) * sd + (k.d - 1) * dd + 1 - s[1], 0);
    in = ops::pad(in, {{0, 0}, {total / 2, total - total / 2}, {0, 0}, {0, 0}, {0, 0}});
  }
  const ops::Conv2DOptions conv{.strides = {options_.strides.h, options_.strides.w},
                                .padding = options_.padding,
                                .dilations = {options_.dilation_rate.h, options_.dilation_rate.w}};
  const Tensor kernel = read(kernel_);
  const Shape& ks = kernel_.shape();
  Tensor y;
  for (int64_t a = 0; a < k.d; ++a) {
    // The depth slices tap a reads, a * dilation + i * stride for output depth i, folded into the batch.
    const int64_t first = a * dd;
    Tensor slices = ops::strided_slice(in, {0, first, 0, 0, 0}, {s[0], first + (out[1] - 1) * sd + 1, s[2], s[3], s[4]},
                                       {1, sd, 1, 1, 1});
    slices = ops::reshape(slices, {s[0] * out[1], s[2], s[3], s[4]});
    Tensor tap = ops::reshape(ops::slice(kernel, {a, 0, 0, 0, 0}, {1, -1, -1, -1, -1}), {ks[1], ks[2], ks[3], ks[4]});
    Tensor term = ops::conv2d(slices, tap, conv);
    y = a == 0 ? term : y + term;
  }
  y = ops::reshape(y, {s[0], out[1], out[2], out[3], filters_});
  if (options_.use_bias) y = y + read(bias_);
  return activations::get(options_.activation)(y);
}

nlohmann::json Conv3D::get_config() const {
  nlohmann::json c = base_config();
  conv_utils::write_conv_config(c, options_, conv_utils::kernel_and_bias_keys<Conv3DOptions>());
  c["filters"] = filters_;
  c["kernel_size"] = kernel_size_.to_json();
  c["groups"] = options_.groups;
  return c;
}

LayerPtr Conv3D::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const std::string w = "Conv3D '" + base.name + "'";
  Conv3DOptions o = conv_utils::read_conv_config(c, base, w, conv_utils::kernel_and_bias_keys<Conv3DOptions>());
  o.groups = config_int(c, "groups", 1, w);
  EMBER_CHECK(c.contains("kernel_size"), InvalidArgument) << w << ": config key \"kernel_size\" is missing";
  return std::make_shared<Conv3D>(config_required_int(c, "filters", w),
                                  conv_utils::size3_from_json(c["kernel_size"], w, "kernel_size"), o);
}

EMBER_REGISTER_LAYER(Conv3D);

}  // namespace ember::layers
