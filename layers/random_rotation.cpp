#include "layers/random_rotation.h"

#include <numbers>

#include "framework/core/config_reader.h"
#include "framework/ops/array.h"
#include "framework/ops/creation.h"
#include "framework/ops/elementwise.h"

namespace ember::layers {

RandomRotation::RandomRotation(Factor factor, RandomRotationOptions o)
    : RandomAffineLayer("random_rotation", {o.name, o.dtype, o.trainable}, o.seed,
                        image_preprocessing::check_data_format(o.data_format, "RandomRotation"),
                        {.fill_mode = o.fill_mode, .interpolation = o.interpolation, .fill_value = o.fill_value}),
      factor_(image_preprocessing::base_factor_range(factor, -1, 1, who())) {
  check_fill_options();
}

// Keras's _compute_affine_matrix with only an angle: about the centre (cx, cy) = ((w - 1) / 2, (h - 1) / 2),
// [cos, -sin, cx - cx cos + cy sin, sin, cos, cy - cx sin - cy cos, 0, 0].
Tensor RandomRotation::augment(const Tensor& images) {
  const int64_t n = images.shape()[0];
  const Tensor angle = uniform(Shape{n, 1}, factor_.first * 360.0, factor_.second * 360.0) *
                       (std::numbers::pi / 180.0);
  const double cx = 0.5 * static_cast<double>(images.shape()[2] - 1);
  const double cy = 0.5 * static_cast<double>(images.shape()[1] - 1);
  const Tensor cos = ops::cos(angle), sin = ops::sin(angle);
  const Tensor a0 = cos, a1 = -sin, b0 = sin, b1 = cos;
  const Tensor a2 = (cx - a0 * cx) - a1 * cy;
  const Tensor b2 = (cy - b0 * cx) - b1 * cy;
  const Tensor transforms = ops::concat({a0, a1, a2, b0, b1, b2, ops::zeros({n, 2})}, 1);
  return transform(images, transforms);
}

nlohmann::json RandomRotation::get_config() const {
  nlohmann::json c = affine_base_config();
  c["factor"] = {factor_.first, factor_.second};
  return c;
}

LayerPtr RandomRotation::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const std::string who = "RandomRotation '" + base.name + "'";
  EMBER_CHECK(c.contains("factor"), InvalidArgument) << who << ": config has no \"factor\"";
  const AffineFillOptions f = fill_from_config(c, who);
  RandomRotationOptions o{.fill_mode = f.fill_mode,
                          .interpolation = f.interpolation,
                          .seed = seed_from_config(c, who),
                          .fill_value = f.fill_value,
                          .data_format = ::ember::detail::config_string(c, "data_format", "channels_last", who),
                          .name = base.name,
                          .dtype = base.dtype,
                          .trainable = base.trainable};
  return std::make_shared<RandomRotation>(Factor::from_json(c["factor"], who, "factor"), o);
}

EMBER_REGISTER_LAYER(RandomRotation);

}  // namespace ember::layers
