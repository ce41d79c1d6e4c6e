#include "layers/random_flip.h"

#include "framework/core/config_reader.h"
#include "framework/ops/elementwise.h"

namespace ember::layers {

RandomFlip::RandomFlip(std::string mode, RandomFlipOptions options)
    : RandomImageLayer("random_flip", {options.name, options.dtype, options.trainable}, options.seed,
                       image_preprocessing::check_data_format(options.data_format, "RandomFlip"))
    , mode_(std::move(mode)) {
  EMBER_CHECK(mode_ == "horizontal" || mode_ == "vertical" || mode_ == "horizontal_and_vertical", InvalidArgument)
      << who() << ": mode must be \"horizontal\", \"vertical\" or \"horizontal_and_vertical\", got \"" << mode_ << "\"";
}

// Keras: flips = uniform((N, 1, 1, 1)) <= 0.5, one draw per image for both directions.
Tensor RandomFlip::augment(const Tensor& images) {
  const Tensor flips = ops::less_equal(uniform(Shape{images.shape()[0], 1, 1, 1}, 0, 1),
                                       Tensor::scalar_of(0.5, DType::Float32, images.device()));
  Tensor y = images;
  if (mode_ != "vertical") y = ops::where(flips, image_preprocessing::reverse(y, 2), y);
  if (mode_ != "horizontal") y = ops::where(flips, image_preprocessing::reverse(y, 1), y);
  return y;
}

nlohmann::json RandomFlip::get_config() const {
  nlohmann::json c = random_base_config();
  c["mode"] = mode_;
  return c;
}

LayerPtr RandomFlip::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const std::string who = "RandomFlip '" + base.name + "'";
  RandomFlipOptions o{.seed = seed_from_config(c, who),
                      .data_format = ::ember::detail::config_string(c, "data_format", "channels_last", who),
                      .name = base.name,
                      .dtype = base.dtype,
                      .trainable = base.trainable};
  return std::make_shared<RandomFlip>(::ember::detail::config_string(c, "mode", "horizontal_and_vertical", who), o);
}

EMBER_REGISTER_LAYER(RandomFlip);

}  // namespace ember::layers
