#pragma once
// RandomRotation (Keras: keras.layers.RandomRotation): while training, rotates each image about its centre by an
// angle drawn uniformly from factor * 360 degrees (factor f: [-f, f]; or {lower, upper}), filling the corners by
// fill_mode; inference is the identity (in the compute dtype).
#include <cstdint>
#include <optional>
#include <string>

#include "layers/image_preprocessing.h"

namespace ember::layers {

struct RandomRotationOptions {
  std::string fill_mode = "reflect";       // "reflect", "wrap", "constant" or "nearest"
  std::string interpolation = "bilinear";  // "bilinear" or "nearest"
  std::optional<uint64_t> seed{};          // seeded: a reproducible sequence of draws (Keras's SeedGenerator)
  double fill_value = 0.0;                 // with fill_mode "constant"
  std::string data_format{};               // "channels_last" (default); "channels_first" is Unimplemented
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class RandomRotation : public RandomAffineLayer {
  EMBER_LAYER(RandomRotation)
  // factor: fractions of a full turn, in [-1, 1].
  explicit RandomRotation(Factor factor, RandomRotationOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);
  nlohmann::json get_config() const override;

  std::pair<double, double> factor() const { return factor_; }

 protected:
  Tensor augment(const Tensor& images) override;

 private:
  std::pair<double, double> factor_;
};

}  // namespace ember::layers
