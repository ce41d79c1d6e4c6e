#include "layers/random_zoom.h"

#include "framework/core/config_reader.h"
#include "framework/ops/array.h"
#include "framework/ops/creation.h"
#include "framework/ops/elementwise.h"

namespace ember::layers {

RandomZoom::RandomZoom(Factor height_factor, RandomZoomOptions o)
    : RandomAffineLayer("random_zoom", {o.name, o.dtype, o.trainable}, o.seed,
                        image_preprocessing::check_data_format(o.data_format, "RandomZoom"),
                        {.fill_mode = o.fill_mode, .interpolation = o.interpolation, .fill_value = o.fill_value}),
      height_factor_(std::move(height_factor)),
      width_factor_(std::move(o.width_factor)) {
  check_fill_options();
  height_range_ = image_preprocessing::symmetric_factor_range(height_factor_, true, who(), "height_factor");
  width_range_ = width_factor_ ? image_preprocessing::symmetric_factor_range(*width_factor_, true, who(), "width_factor")
                               : height_range_;
}

// Keras's zoom matrix: [zx, 0, (w - 1) / 2 (1 - zx), 0, zy, (h - 1) / 2 (1 - zy), 0, 0].
Tensor RandomZoom::augment(const Tensor& images) {
  const int64_t n = images.shape()[0];
  const Tensor zy = uniform(Shape{n, 1}, 1.0 + height_range_.first, 1.0 + height_range_.second);
  const Tensor zx = width_factor_ ? uniform(Shape{n, 1}, 1.0 + width_range_.first, 1.0 + width_range_.second) : zy;
  const double half_w = (static_cast<double>(images.shape()[2]) - 1.0) / 2.0;
  const double half_h = (static_cast<double>(images.shape()[1]) - 1.0) / 2.0;
  const Tensor zero = ops::zeros({n, 1});
  const Tensor transforms =
      ops::concat({zx, zero, (1.0 - zx) * half_w, zero, zy, (1.0 - zy) * half_h, ops::zeros({n, 2})}, 1);
  return transform(images, transforms);
}

nlohmann::json RandomZoom::get_config() const {
  nlohmann::json c = affine_base_config();
  c["height_factor"] = height_factor_.to_json();
  c["width_factor"] = width_factor_ ? width_factor_->to_json() : nlohmann::json(nullptr);
  return c;
}

LayerPtr RandomZoom::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const std::string who = "RandomZoom '" + base.name + "'";
  EMBER_CHECK(c.contains("height_factor"), InvalidArgument) << who << ": config has no \"height_factor\"";
  const AffineFillOptions f = fill_from_config(c, who);
  RandomZoomOptions o{.fill_mode = f.fill_mode,
                      .interpolation = f.interpolation,
                      .seed = seed_from_config(c, who),
                      .fill_value = f.fill_value,
                      .data_format = ::ember::detail::config_string(c, "data_format", "channels_last", who),
                      .name = base.name,
                      .dtype = base.dtype,
                      .trainable = base.trainable};
  if (c.contains("width_factor") && !c["width_factor"].is_null())
    o.width_factor = Factor::from_json(c["width_factor"], who, "width_factor");
  return std::make_shared<RandomZoom>(Factor::from_json(c["height_factor"], who, "height_factor"), o);
}

EMBER_REGISTER_LAYER(RandomZoom);

}  // namespace ember::layers
