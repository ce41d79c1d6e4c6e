#pragma once
// GaussianNoise (Keras: keras.layers.GaussianNoise): while training, adds zero-centred Normal(0, stddev)
// noise to its input; inference is the identity.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "framework/model/layer.h"
#include "layers/seeded_noise.h"

namespace ember::layers {

struct GaussianNoiseOptions {
  // Seeded: each training call draws fresh noise, in a sequence fixed by the seed (Keras's SeedGenerator).
  // Unseeded: the global sequence (random::set_seed).
  std::optional<uint64_t> seed{};
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class GaussianNoise : public Layer {
  EMBER_LAYER(GaussianNoise)
  // stddev in [0, 1], as Keras checks.
  explicit GaussianNoise(double stddev, GaussianNoiseOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

  Tensor call(const Tensor& x, bool training) override;
  Shape compute_output_shape(const Shape& input_shape) override { return input_shape; }
  // No input spec in Keras: any shape is accepted after the first call.
  void check_input_shape(const std::vector<Shape>& /*input_shapes*/) const override {}
  nlohmann::json get_config() const override;

  double stddev() const { return stddev_; }

 private:
  double stddev_;
  GaussianNoiseOptions options_;
  SeededNoise noise_;
};

}  // namespace ember::layers
