#pragma once
// RandomBrightness (Keras: keras.layers.RandomBrightness): while training, adds to each image a delta drawn
// uniformly from factor * (value_range's width) (factor f: [-f, f]), clipped to value_range; inference is the
// identity (in the compute dtype).
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "layers/image_preprocessing.h"

namespace ember::layers {

struct RandomBrightnessOptions {
  std::pair<double, double> value_range{0, 255};
  std::optional<uint64_t> seed{};  // seeded: a reproducible sequence of draws (Keras's SeedGenerator)
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class RandomBrightness : public RandomImageLayer {
  EMBER_LAYER(RandomBrightness)
  // factor in [-1, 1] (or a pair within it).
  explicit RandomBrightness(Factor factor, RandomBrightnessOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);
  nlohmann::json get_config() const override;

  std::pair<double, double> factor() const { return factor_; }

 protected:
  Tensor augment(const Tensor& images) override;

 private:
  std::pair<double, double> factor_;
  std::pair<double, double> value_range_;
};

}  // namespace ember::layers
