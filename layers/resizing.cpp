#include "layers/resizing.h"

#include "framework/core/config_reader.h"
#include "framework/core/strings.h"
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
  EMBER_CHECK(!options_.pad_to_aspect_ratio, Unimplemented) << who << ": pad_to_aspect_ratio=true is not implemented";
  EMBER_CHECK(!options_.antialias, Unimplemented) << who << ": antialias=true is not implemented";
  EMBER_CHECK(!(options_.crop_to_aspect_ratio && options_.pad_to_aspect_ratio), InvalidArgument)
      << who << ": only one of crop_to_aspect_ratio and pad_to_aspect_ratio can be true";
}

Tensor Resizing::call(const Tensor& x, bool /*training*/) {
  image_preprocessing::check_image_shape(x.shape(), "Resizing '" + name() + "'");
  Tensor y = ops::image::resize(x, height_, width_,
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
