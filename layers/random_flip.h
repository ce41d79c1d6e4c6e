#pragma once
// RandomFlip (Keras: keras.layers.RandomFlip): while training, flips each image (one, or each of a batch)
// left-right ("horizontal"), top-bottom ("vertical") or both ("horizontal_and_vertical") with probability 1/2;
// inference is the identity (in the compute dtype).
#include <cstdint>
#include <optional>
#include <string>

#include "layers/image_preprocessing.h"

namespace ember::layers {

struct RandomFlipOptions {
  std::optional<uint64_t> seed{};  // seeded: a reproducible sequence of draws (Keras's SeedGenerator)
  std::string data_format{};       // "channels_last" (default); "channels_first" is Unimplemented
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class RandomFlip : public RandomImageLayer {
  EMBER_LAYER(RandomFlip)
  explicit RandomFlip(std::string mode = "horizontal_and_vertical", RandomFlipOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);
  nlohmann::json get_config() const override;

  const std::string& mode() const { return mode_; }

 protected:
  Tensor augment(const Tensor& images) override;

 private:
  std::string mode_;
};

}  // namespace ember::layers
