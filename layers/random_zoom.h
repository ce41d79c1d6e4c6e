#pragma once
// RandomZoom (Keras: keras.layers.RandomZoom): while training, scales each image about its centre: each axis
// reads (1 + z) times its extent, z drawn uniformly from the factor's range (factor f: [-f, f]; a positive z zooms
// out, a negative one in); without width_factor both axes take the height's draw. Inference is the identity
// (in the compute dtype).
#include <cstdint>
#include <optional>
#include <string>

#include "layers/image_preprocessing.h"

namespace ember::layers {

struct RandomZoomOptions {
  std::optional<Factor> width_factor{};    // none: keep the aspect ratio
  std::string fill_mode = "reflect";       // "reflect", "wrap", "constant" or "nearest"
  std::string interpolation = "bilinear";  // "bilinear" or "nearest"
  std::optional<uint64_t> seed{};          // seeded: a reproducible sequence of draws (Keras's SeedGenerator)
  double fill_value = 0.0;                 // with fill_mode "constant"
  std::string data_format{};               // "channels_last" (default); "channels_first" is Unimplemented
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class RandomZoom : public RandomAffineLayer {
  EMBER_LAYER(RandomZoom)
  // Factors in (-1, 1].
  explicit RandomZoom(Factor height_factor, RandomZoomOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);
  nlohmann::json get_config() const override;

 protected:
  Tensor augment(const Tensor& images) override;

 private:
  Factor height_factor_;
  std::optional<Factor> width_factor_;
  std::pair<double, double> height_range_, width_range_;
};

}  // namespace ember::layers
