#include "layers/random_contrast.h"

#include "framework/core/config_reader.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"

namespace ember::layers {

RandomContrast::RandomContrast(Factor factor, RandomContrastOptions o)
    : RandomImageLayer("random_contrast", {o.name, o.dtype, o.trainable}, o.seed, "channels_last"),
      factor_(image_preprocessing::base_factor_range(factor, 0, 1, who())),
      value_range_(o.value_range) {}

// Keras: (x - mean over height and width) * c + mean, clipped to value_range.
Tensor RandomContrast::augment(const Tensor& images) {
  const Tensor c = ops::cast(uniform(Shape{images.shape()[0], 1, 1, 1}, 1.0 - factor_.first, 1.0 + factor_.second),
                             images.dtype());
  const Tensor mean = ops::reduce_mean(ops::reduce_mean(images, 1, true), 2, true);
  return ops::clip_by_value((images - mean) * c + mean, value_range_.first, value_range_.second);
}

nlohmann::json RandomContrast::get_config() const {
  nlohmann::json c = random_base_config();
  c["factor"] = {factor_.first, factor_.second};
  c["value_range"] = {value_range_.first, value_range_.second};
  return c;
}

LayerPtr RandomContrast::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const std::string who = "RandomContrast '" + base.name + "'";
  EMBER_CHECK(c.contains("factor"), InvalidArgument) << who << ": config has no \"factor\"";
  image_preprocessing::check_data_format(::ember::detail::config_string(c, "data_format", "channels_last", who), who);
  RandomContrastOptions o{.value_range = image_preprocessing::value_range_from_config(c, who),
                          .seed = seed_from_config(c, who),
                          .name = base.name,
                          .dtype = base.dtype,
                          .trainable = base.trainable};
  return std::make_shared<RandomContrast>(Factor::from_json(c["factor"], who, "factor"), o);
}

EMBER_REGISTER_LAYER(RandomContrast);

}  // namespace ember::layers
