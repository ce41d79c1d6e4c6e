#pragma once
// RandomCrop (Keras: keras.layers.RandomCrop): while training, crops a height x width window at a random
// position (one draw per batch, as Keras); an image not larger than the target in both sides is instead
// resized from its centred crop of the target's aspect ratio. Inference returns the input unchanged (in the
// compute dtype), as Keras 3 does.
#include <cstdint>
#include <optional>
#include <string>

#include "layers/image_preprocessing.h"

namespace ember::layers {

struct RandomCropOptions {
  std::optional<uint64_t> seed{};  // seeded: a reproducible sequence of draws (Keras's SeedGenerator)
  std::string data_format{};       // "channels_last" (default); "channels_first" is Unimplemented
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class RandomCrop : public RandomImageLayer {
  EMBER_LAYER(RandomCrop)
  RandomCrop(int64_t height, int64_t width, RandomCropOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);
  Shape compute_output_shape(const Shape& input_shape) override;
  nlohmann::json get_config() const override;

  int64_t height() const { return height_; }
  int64_t width() const { return width_; }

 protected:
  Tensor augment(const Tensor& images) override;

 private:
  int64_t height_, width_;
};

}  // namespace ember::layers
