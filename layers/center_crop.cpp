#include "layers/center_crop.h"

#include "framework/core/config_reader.h"
#include "framework/ops/array.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/image.h"
#include "layers/image_preprocessing.h"

namespace ember::layers {

CenterCrop::CenterCrop(int64_t height, int64_t width, CenterCropOptions options)
    : Layer("center_crop", {options.name, options.dtype, options.trainable}),
      height_(height),
      width_(width),
      options_(std::move(options)) {
  const std::string who = "CenterCrop '" + name() + "'";
  EMBER_CHECK(height > 0 && width > 0, InvalidArgument)
      << who << ": height and width must be positive, got (" << height << ", " << width << ")";
  options_.data_format = image_preprocessing::check_data_format(options_.data_format, who);
}

Tensor CenterCrop::call(const Tensor& x, bool /*training*/) {
  image_preprocessing::check_image_shape(x.shape(), "CenterCrop '" + name() + "'");
  const Tensor in = x.dtype() == compute_dtype() ? x : ops::cast(x, compute_dtype());
  const int64_t ha = in.rank() - 3, wa = in.rank() - 2;
  const int64_t h = in.shape()[ha], w = in.shape()[wa];
  if (h >= height_ && w >= width_) {
    std::vector<int64_t> begin(in.rank(), 0), size(in.shape().begin(), in.shape().end());
    begin[ha] = (h - height_) / 2, begin[wa] = (w - width_) / 2, size[ha] = height_, size[wa] = width_;
    return ops::slice(in, begin, size);
  }
  // Keras's smart_resize: the centred crop of the target's aspect ratio, resized bilinearly.
  return ops::image::resize(in, height_, width_, {.crop_to_aspect_ratio = true});
}

Shape CenterCrop::compute_output_shape(const Shape& s) {
  image_preprocessing::check_image_shape(s, "CenterCrop '" + name() + "'");
  std::vector<int64_t> d(s.begin(), s.end());
  d[s.rank() - 3] = height_;
  d[s.rank() - 2] = width_;
  return Shape(d);
}

nlohmann::json CenterCrop::get_config() const {
  nlohmann::json c = base_config();
  c["height"] = height_;
  c["width"] = width_;
  c["data_format"] = options_.data_format;
  return c;
}

LayerPtr CenterCrop::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const std::string who = "CenterCrop '" + base.name + "'";
  CenterCropOptions o{.data_format = ::ember::detail::config_string(c, "data_format", "channels_last", who),
                      .name = base.name,
                      .dtype = base.dtype,
                      .trainable = base.trainable};
  return std::make_shared<CenterCrop>(::ember::detail::config_required_int(c, "height", who),
                                      ::ember::detail::config_required_int(c, "width", who), o);
}

EMBER_REGISTER_LAYER(CenterCrop);

}  // namespace ember::layers
