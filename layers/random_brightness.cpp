#include "layers/random_brightness.h"

#include "framework/core/config_reader.h"
#include "framework/ops/elementwise.h"

namespace ember::layers {

RandomBrightness::RandomBrightness(Factor factor, RandomBrightnessOptions o)
    : RandomImageLayer("random_brightness", {o.name, o.dtype, o.trainable}, o.seed, "channels_last"),
      factor_(image_preprocessing::base_factor_range(factor, -1, 1, who())),
      value_range_(o.value_range) {
  EMBER_CHECK(value_range_.first < value_range_.second, InvalidArgument)
      << who() << ": value_range must be (min, max) with min < max, got (" << value_range_.first << ", "
      << value_range_.second << ")";
}

// Keras: x + uniform(lower, upper) * (max - min), one delta per image, clipped to value_range.
Tensor RandomBrightness::augment(const Tensor& images) {
  const Tensor delta = uniform(Shape{images.shape()[0], 1, 1, 1}, factor_.first, factor_.second) *
                       (value_range_.second - value_range_.first);
  return ops::clip_by_value(images + ops::cast(delta, images.dtype()), value_range_.first, value_range_.second);
}

nlohmann::json RandomBrightness::get_config() const {
  nlohmann::json c = random_base_config();
  c["factor"] = {factor_.first, factor_.second};
  c["value_range"] = {value_range_.first, value_range_.second};
  return c;
}

LayerPtr RandomBrightness::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const std::string who = "RandomBrightness '" + base.name + "'";
  EMBER_CHECK(c.contains("factor"), InvalidArgument) << who << ": config has no \"factor\"";
  image_preprocessing::check_data_format(::ember::detail::config_string(c, "data_format", "channels_last", who), who);
  RandomBrightnessOptions o{.value_range = image_preprocessing::value_range_from_config(c, who),
                            .seed = seed_from_config(c, who),
                            .name = base.name,
                            .dtype = base.dtype,
                            .trainable = base.trainable};
  return std::make_shared<RandomBrightness>(Factor::from_json(c["factor"], who, "factor"), o);
}

EMBER_REGISTER_LAYER(RandomBrightness);

}  // namespace ember::layers
