#pragma once
// RandomTranslation (Keras: keras.layers.RandomTranslation): while training, shifts each image by fractions of
// its height and width drawn uniformly from the factors' ranges (factor f: [-f, f]; positive moves down/right),
// filling the uncovered part by fill_mode; inference is the identity (in the compute dtype).
#include <cstdint>
#include <optional>
#include <string>

#include "layers/image_preprocessing.h"

namespace ember::layers {

struct RandomTranslationOptions {
  std::string fill_mode = "reflect";       // "reflect", "wrap", "constant" or "nearest"
  std::string interpolation = "bilinear";  // "bilinear" or "nearest"
  std::optional<uint64_t> seed{};          // seeded: a reproducible sequence of draws (Keras's SeedGenerator)
  double fill_value = 0.0;                 // with fill_mode "constant"
  std::string data_format{};               // "channels_last" (default); "channels_first" is Unimplemented
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class RandomTranslation : public RandomAffineLayer {
  EMBER_LAYER(RandomTranslation)
  // Factors in [-1, 1].
  RandomTranslation(Factor height_factor, Factor width_factor, RandomTranslationOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);
  nlohmann::json get_config() const override;

 protected:
  Tensor augment(const Tensor& images) override;

 private:
  Factor height_factor_, width_factor_;
  std::pair<double, double> height_range_, width_range_;
};

}  // namespace ember::layers
