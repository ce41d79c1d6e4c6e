#pragma once
// RandomContrast (Keras: keras.layers.RandomContrast): while training, scales each image's deviation from its
// per-channel mean by c drawn uniformly from [1 - lower, 1 + upper] (factor f: Keras's range (0, f), so c in
// [1, 1 + f]), clipped to value_range; inference is the identity (in the compute dtype).
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "layers/image_preprocessing.h"

namespace ember::layers {

struct RandomContrastOptions {
  std::pair<double, double> value_range{0, 255};
  std::optional<uint64_t> seed{};  // seeded: a reproducible sequence of draws (Keras's SeedGenerator)
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class RandomContrast : public RandomImageLayer {
  EMBER_LAYER(RandomContrast)
  // factor in [0, 1] (or a pair within it).
  explicit RandomContrast(Factor factor, RandomContrastOptions options = {});
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
