#pragma once
// SpatialDropout2D (Keras: keras.layers.SpatialDropout2D): Dropout of whole feature maps. While training,
// each (sample, channel) pair is zeroed with probability `rate` across all its positions, and the rest are
// scaled by 1 / (1 - rate); inference is the identity.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "framework/model/layer.h"
#include "layers/seeded_noise.h"

namespace ember::layers {

struct SpatialDropout2DOptions {
  // Only "channels_last" (NHWC; "" means the default, channels_last) is supported.
  std::string data_format{};
  // Seeded: each training call draws a fresh mask, in a sequence fixed by the seed. Unseeded: the global
  // sequence (random::set_seed).
  std::optional<uint64_t> seed{};
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

// Keras's config for this layer has no "trainable" key and a plain dtype string (BaseSpatialDropout.get_config
// lists rate, seed, name, dtype, data_format only); Ember writes the same keys, with the policy's name as the
// dtype ("float32", "mixed_float16"; Keras writes the variable dtype there, losing a mixed policy).
class SpatialDropout2D : public Layer {
  EMBER_LAYER(SpatialDropout2D)
  // rate in [0, 1), as Dropout.
  explicit SpatialDropout2D(double rate, SpatialDropout2DOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

  Tensor call(const Tensor& x, bool training) override;
  Shape compute_output_shape(const Shape& input_shape) override;
  // Keras's input spec: rank 4 (any sizes).
  void check_input_shape(const std::vector<Shape>& input_shapes) const override;
  nlohmann::json get_config() const override;

  double rate() const { return rate_; }

 private:
  double rate_;
  SpatialDropout2DOptions options_;
  SeededNoise noise_;
};

}  // namespace ember::layers
