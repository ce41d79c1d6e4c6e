#pragma once
// SeededNoise (Keras: a layer's keras.random.SeedGenerator): the random draws of the layers that take a
// `seed` option (Dropout, SpatialDropout2D, GaussianNoise, GaussianDropout). Seeded, each call draws fresh
// numbers, but the sequence depends only on the seed and how many draws came before, not on other random ops
// or other layers; unseeded, draws come from the global sequence (random::set_seed).
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "framework/core/tensor.h"

namespace ember::layers {

class SeededNoise {
 public:
  explicit SeededNoise(std::optional<uint64_t> seed = std::nullopt) : seed_(seed) {}

  // Uniform samples in [0, 1).
  Tensor uniform(const Shape& shape, DType dtype);
  // Normal(mean, stddev) samples.
  Tensor normal(const Shape& shape, DType dtype, double mean, double stddev);

  const std::optional<uint64_t>& seed() const { return seed_; }

 private:
  Tensor draw(bool normal, const Shape& shape, DType dtype, double a, double b);

  std::optional<uint64_t> seed_;
  uint64_t seeded_calls_ = 0;  // how many seeded draws were made: the seed generator's state
};

// A Keras config's "seed": null (or absent) or an integer >= 0, else InvalidArgument naming who.
std::optional<uint64_t> seed_from_config(const nlohmann::json& config, const std::string& who);
// The seed as Keras writes it: the integer, or null.
nlohmann::json seed_to_config(const std::optional<uint64_t>& seed);

}  // namespace ember::layers
