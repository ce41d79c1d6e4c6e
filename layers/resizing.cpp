#include "layers/resizing.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "framework/core/config_reader.h"
#include "framework/core/strings.h"
#include "framework/ops/array.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/image.h"
#include "layers/image_preprocessing.h"

namespace ember::layers {

using ::ember::detail::config_bool;
using ::ember::detail::config_double;
using ::ember::detail::config_string;

Resizing::Resizing(int64_t height, int64_t width, ResizingOptions options)
    : Layer("resizing", {options.name, options.dtype, options.trainable}),
      height_(height),
      width_(width),
      options_(std::move(options)) {
  const std::string who = "Resizing '" + name() + "'";
  EMBER_CHECK(height > 0 && width > 0, InvalidArgument)
      << who << ": height and width must be positive, got (" << height << ", " << width << ")";
  options_.data_format = image_preprocessing::check_data_format(options_.data_format, who);
  options_.interpolation = ascii_lower(options_.interpolation);
  if (options_.interpolation != "bilinear" && options_.interpolation != "nearest")
    throw make_error<Unimplemented>(who, ": interpolation \"", options_.interpolation,
                                    "\" is not implemented (Ember implements \"bilinear\" and \"nearest\")");
  EMBER_CHECK(!options_.antialias, Unimplemented) << who << ": antialias=true is not implemented";
  EMBER_CHECK(!(options_.crop_to_aspect_ratio && options_.pad_to_aspect_ratio), InvalidArgument)
      << who << ": only one of crop_to_aspect_ratio and pad_to_aspect_ratio can be true";
  EMBER_CHECK(options_.fill_mode == "constant", InvalidArgument)
      << who << ": fill_mode must be \"constant\" (the only one Keras's resize takes), got \"" << options_.fill_mode
      << "\"";
}

Tensor Resizing::call(const Tensor& x, bool /*training*/) {
  image_preprocessing::check_image_shape(x.shape(), "Resizing '" + name() + "'");
  Tensor in = x;
  if (options_.pad_to_aspect_ratio) {
    // Keras: the box of the target's aspect ratio around the image (sides computed in float32 and truncated),
    // the same padding before and after, filled with fill_value.
    const int64_t ha = x.rank() - 3, wa = x.rank() - 2, h = x.shape()[ha], w = x.shape()[wa];
    const int64_t box_h = std::max(h, static_cast<int64_t>(static_cast<float>(w * height_) / static_cast<float>(width_)));
    const int64_t box_w = std::max(w, static_cast<int64_t>(static_cast<float>(h * width_) / static_cast<float>(height_)));
    const int64_t top = static_cast<int64_t>(static_cast<float>(box_h - h) / 2);
    const int64_t left = static_cast<int64_t>(static_cast<float>(box_w - w) / 2);
    std::vector<std::pair<int64_t, int64_t>> pads(x.rank(), {0, 0});
    pads[ha] = {top, top};
    pads[wa] = {left, left};
    if (top > 0 || left > 0) in = ops::pad(x, pads, {.constant_values = options_.fill_value});
  }
  Tensor y = ops::image::resize(in, height_, width_,
                                {.interpolation = options_.interpolation,
                                 .crop_to_aspect_ratio = options_.crop_to_aspect_ratio});
  if (y.dtype() == x.dtype()) return y;
  // Keras rounds an integer image's resized values and casts them back (saturating: bilinear stays in range).
  return ops::cast(ops::round(y), x.dtype());
}

Shape Resizing::compute_output_shape(const Shape& s) {
  image_preprocessing::check_image_shape(s, "Resizing '" + name() + "'");
  std::vector<int64_t> d(s.begin(), s.end());
  d[s.rank() - 3] = height_;
  d[s.rank() - 2] = width_;
  return Shape(d);
}

nlohmann::json Resizing::get_config() const {
  nlohmann::json c = base_config();
  c["height"] = height_;
  c["width"] = width_;
  c["interpolation"] = options_.interpolation;
  c["crop_to_aspect_ratio"] = options_.crop_to_aspect_ratio;
  c["pad_to_aspect_ratio"] = options_.pad_to_aspect_ratio;
  c["fill_mode"] = options_.fill_mode;
  c["fill_value"] = options_.fill_value;
  c["antialias"] = options_.antialias;
  c["data_format"] = options_.data_format;
  return c;
}

LayerPtr Resizing::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const std::string who = "Resizing '" + base.name + "'";
  ResizingOptions o{.interpolation = config_string(c, "interpolation", "bilinear", who),
                    .crop_to_aspect_ratio = config_bool(c, "crop_to_aspect_ratio", false, who),
                    .pad_to_aspect_ratio = config_bool(c, "pad_to_aspect_ratio", false, who),
                    .fill_mode = config_string(c, "fill_mode", "constant", who),
                    .fill_value = config_double(c, "fill_value", 0.0, who),
                    .antialias = config_bool(c, "antialias", false, who),
                    .data_format = config_string(c, "data_format", "channels_last", who),
                    .name = base.name,
                    .dtype = base.dtype,
                    .trainable = base.trainable};
  return std::make_shared<Resizing>(::ember::detail::config_required_int(c, "height", who),
                                    ::ember::detail::config_required_int(c, "width", who), o);
}

EMBER_REGISTER_LAYER(Resizing);

}  // namespace ember::layers
