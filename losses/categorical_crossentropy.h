#pragma once
// CategoricalCrossentropy (Keras: keras.losses.CategoricalCrossentropy): -sum(y_true * log(p)) over axis,
// for one-hot (or soft) labels. Probabilities are renormalised along axis and clipped to
// [1e-7, 1 - 1e-7]; from_logits uses the stable log_softmax form.
#include "losses/loss.h"

namespace ember::losses {

struct CategoricalCrossentropyOptions {
  bool from_logits = false;
  double label_smoothing = 0.0;  // labels become y * (1 - s) + s / num_classes (classes: the last axis)
  int64_t axis = -1;             // the class axis
  std::string reduction = "sum_over_batch_size";
  std::string name = {};  // empty: "categorical_crossentropy"
};

class CategoricalCrossentropy : public Loss {
  EMBER_LOSS(CategoricalCrossentropy)
  explicit CategoricalCrossentropy(CategoricalCrossentropyOptions options = {});
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
  nlohmann::json get_config() const override;
  bool from_logits() const { return options_.from_logits; }

 private:
  CategoricalCrossentropyOptions options_;
};

}  // namespace ember::losses
