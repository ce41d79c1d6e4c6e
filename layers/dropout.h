#pragma once
// Dropout (Keras: keras.layers.Dropout): while training, zeroes a random fraction `rate` of the inputs and
// scales the rest by 1 / (1 - rate) (inverted dropout), so inference is the identity.
#include <optional>
#include <string>
#include <vector>

#include "framework/model/layer.h"
#include "layers/seeded_noise.h"

namespace ember::layers {

struct DropoutOptions {
  // Shape of the keep mask, broadcast over the input (e.g. {-1, 1, 1, C} drops whole channels); -1 takes
  // the input's dimension (Keras's None). Empty optional: the input's shape.
  std::optional<std::vector<int64_t>> noise_shape{};
  // Seeded: each call draws a fresh mask, but the sequence of masks is the same for every layer built
  // with this seed (Keras's SeedGenerator). Unseeded: the global seed sequence (random::set_seed).
  std::optional<uint64_t> seed{};
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class Dropout : public Layer {
  EMBER_LAYER(Dropout)
  explicit Dropout(double rate, DropoutOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

  Tensor call(const Tensor& x, bool training) override;
  Shape compute_output_shape(const Shape& input_shape) override { return input_shape; }
  // Keras's Dropout has no input spec: any shape is accepted after the first call.
  void check_input_shape(const std::vector<Shape>& /*input_shapes*/) const override {}
  nlohmann::json get_config() const override;

  double rate() const { return rate_; }

 private:
  Shape noise_shape_for(const Shape& input_shape) const;

  double rate_;
  DropoutOptions options_;
  SeededNoise noise_;
};

}  // namespace ember::layers
