#pragma once
// BinaryCrossentropy (Keras: keras.losses.BinaryCrossentropy): elementwise binary crossentropy averaged
// over axis. Probabilities are clipped to [1e-7, 1 - 1e-7]; from_logits uses TF's stable
// max(x, 0) - x * z + log1p(exp(-|x|)).
#include "losses/loss.h"

namespace ember::losses {

struct BinaryCrossentropyOptions {
  bool from_logits = false;
  double label_smoothing = 0.0;  // labels become y * (1 - s) + 0.5 * s
  int64_t axis = -1;             // the axis averaged over
  std::string reduction = "sum_over_batch_size";
  std::string name = {};  // empty: "binary_crossentropy"
};

class BinaryCrossentropy : public Loss {
  EMBER_LOSS(BinaryCrossentropy)
  explicit BinaryCrossentropy(BinaryCrossentropyOptions options = {});
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
  nlohmann::json get_config() const override;
  bool from_logits() const { return options_.from_logits; }

 private:
  BinaryCrossentropyOptions options_;
};

}  // namespace ember::losses
