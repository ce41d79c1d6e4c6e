#pragma once
// CategoricalFocalCrossentropy (Keras: keras.losses.CategoricalFocalCrossentropy): sum over axis of
// alpha * (1 - p)^gamma * -y_true * log(p), p the probabilities renormalised along axis and clipped to
// [1e-7, 1 - 1e-7] (softmax first from logits), for one-hot (or soft) labels (Lin et al., 2018).
#include <initializer_list>
#include <vector>

#include "losses/loss.h"

namespace ember::losses {

// Keras's alpha of the categorical focal loss: one weight for every class (`.alpha = 0.25`), or one per
// class (`.alpha = {0.1, 0.3, 0.6}`), multiplied along the last axis.
struct FocalAlpha {
  FocalAlpha(double alpha = 0.25) : values{alpha} {}  // NOLINT(google-explicit-constructor): `.alpha = 0.5`
  FocalAlpha(std::initializer_list<double> per_class) : values(per_class), per_class(true) {}
  explicit FocalAlpha(std::vector<double> per_class) : values(std::move(per_class)), per_class(true) {}
  std::vector<double> values;
  bool per_class = false;  // a list in Keras's config, even of one value
};

struct CategoricalFocalCrossentropyOptions {
  FocalAlpha alpha = 0.25;
  double gamma = 2.0;             // the focusing exponent; 0 (with alpha 1) gives categorical crossentropy
  bool from_logits = false;
  double label_smoothing = 0.0;   // labels become y * (1 - s) + s / num_classes (classes: the last axis)
  int64_t axis = -1;              // the class axis
  std::string reduction = "sum_over_batch_size";
  std::string name = {};  // empty: "categorical_focal_crossentropy"
};

class CategoricalFocalCrossentropy : public Loss {
  EMBER_LOSS(CategoricalFocalCrossentropy)
  explicit CategoricalFocalCrossentropy(CategoricalFocalCrossentropyOptions options = {});
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
  nlohmann::json get_config() const override;
  bool from_logits() const { return options_.from_logits; }

 private:
  CategoricalFocalCrossentropyOptions options_;
};

}  // namespace ember::losses
