#pragma once
// BinaryFocalCrossentropy (Keras: keras.losses.BinaryFocalCrossentropy): binary crossentropy scaled by the
// focal factor (1 - p_t)^gamma, p_t = y_true * p + (1 - y_true) * (1 - p), optionally by the class weight
// alpha (class 1) / 1 - alpha (class 0), averaged over axis (Lin et al., 2018).
#include "losses/loss.h"

namespace ember::losses {

struct BinaryFocalCrossentropyOptions {
  bool apply_class_balancing = false;  // weigh class 1 by alpha and class 0 by 1 - alpha
  double alpha = 0.25;
  double gamma = 2.0;                  // the focusing exponent; 0 gives binary crossentropy
  bool from_logits = false;
  double label_smoothing = 0.0;        // labels become y * (1 - s) + 0.5 * s
  int64_t axis = -1;                   // the axis averaged over
  std::string reduction = "sum_over_batch_size";
  std::string name = {};  // empty: "binary_focal_crossentropy"
};

class BinaryFocalCrossentropy : public Loss {
  EMBER_LOSS(BinaryFocalCrossentropy)
  explicit BinaryFocalCrossentropy(BinaryFocalCrossentropyOptions options = {});
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
  nlohmann::json get_config() const override;
  bool from_logits() const { return options_.from_logits; }

 private:
  BinaryFocalCrossentropyOptions options_;
};

}  // namespace ember::losses
