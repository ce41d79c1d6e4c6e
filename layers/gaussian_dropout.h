#pragma once
// GaussianDropout (Keras: keras.layers.GaussianDropout): while training, multiplies its input by
// Normal(1, sqrt(rate / (1 - rate))) noise; inference is the identity.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "framework/model/layer.h"
#include "layers/seeded_noise.h"

namespace ember::layers {

struct GaussianDropoutOptions {
  // Seeded: each training call draws fresh noise, in a sequence fixed by the seed (Keras's SeedGenerator).
  // Unseeded: the global sequence (random::set_seed).
  std::optional<uint64_t> seed{};
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class GaussianDropout : public Layer {
  EMBER_LAYER(GaussianDropout)
  // rate in [0, 1). Keras also accepts 1, where the noise's stddev is infinite and the output is not a number.
  explicit GaussianDropout(double rate, GaussianDropoutOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

  Tensor call(const Tensor& x, bool training) override;
  Shape compute_output_shape(const Shape& input_shape) override { return input_shape; }
  // No input spec in Keras: any shape is accepted after the first call.
  void check_input_shape(const std::vector<Shape>& /*input_shapes*/) const override {}
  nlohmann::json get_config() const override;

  double rate() const { return rate_; }

 private:
  double rate_;
  GaussianDropoutOptions options_;
  SeededNoise noise_;
};

}  // namespace ember::layers
