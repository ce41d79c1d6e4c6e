#include "layers/random_translation.h"

#include "framework/core/config_reader.h"
#include "framework/ops/array.h"
#include "framework/ops/creation.h"
#include "framework/ops/elementwise.h"

namespace ember::layers {

RandomTranslation::RandomTranslation(Factor height_factor, Factor width_factor, RandomTranslationOptions o)
    : RandomAffineLayer("random_translation", {o.name, o.dtype, o.trainable}, o.seed,
                        image_preprocessing::check_data_format(o.data_format, "RandomTranslation"),
                        {.fill_mode = o.fill_mode, .interpolation = o.interpolation, .fill_value = o.fill_value}),
      height_factor_(std::move(height_factor)),
      width_factor_(std::move(width_factor)) {
  check_fill_options();
  height_range_ = image_preprocessing::symmetric_factor_range(height_factor_, false, who(), "height_factor");
  width_range_ = image_preprocessing::symmetric_factor_range(width_factor_, false, who(), "width_factor");
}

// Keras's translation matrix: [1, 0, -dx, 0, 1, -dy, 0, 0], dx = draw * width, dy = draw * height (the height's
// draw first).
Tensor RandomTranslation::augment(const Tensor& images) {
  const int64_t n = images.shape()[0];
  const Tensor dy = uniform(Shape{n, 1}, height_range_.first, height_range_.second) *
                    static_cast<double>(images.shape()[1]);
  const Tensor dx = uniform(Shape{n, 1}, width_range_.first, width_range_.second) *
                    static_cast<double>(images.shape()[2]);
  const Tensor one = ops::ones({n, 1}), zero = ops::zeros({n, 1});
  return transform(images, ops::concat({one, zero, -dx, zero, one, -dy, ops::zeros({n, 2})}, 1));
}

nlohmann::json RandomTranslation::get_config() const {
  nlohmann::json c = affine_base_config();
  c["height_factor"] = height_factor_.to_json();
  c["width_factor"] = width_factor_.to_json();
  return c;
}

LayerPtr RandomTranslation::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const std::string who = "RandomTranslation '" + base.name + "'";
  for (const char* key : {"height_factor", "width_factor"})
    EMBER_CHECK(c.contains(key), InvalidArgument) << who << ": config has no \"" << key << "\"";
  const AffineFillOptions f = fill_from_config(c, who);
  RandomTranslationOptions o{.fill_mode = f.fill_mode,
                             .interpolation = f.interpolation,
                             .seed = seed_from_config(c, who),
                             .fill_value = f.fill_value,
                             .data_format = ::ember::detail::config_string(c, "data_format", "channels_last", who),
                             .name = base.name,
                             .dtype = base.dtype,
                             .trainable = base.trainable};
  return std::make_shared<RandomTranslation>(Factor::from_json(c["height_factor"], who, "height_factor"),
                                             Factor::from_json(c["width_factor"], who, "width_factor"), o);
}

EMBER_REGISTER_LAYER(RandomTranslation);

}  // namespace ember::layers
