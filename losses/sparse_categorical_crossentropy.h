#pragma once
// SparseCategoricalCrossentropy (Keras: keras.losses.SparseCategoricalCrossentropy): -log p[label] for
// integer labels (int32, int64, uint8, or floats truncated to integers) of shape y_pred.shape[:-1] (a
// trailing 1 is squeezed). Probabilities are clipped to [1e-7, 1 - 1e-7] and renormalised through a
// log-softmax of their logs (TF's form); from_logits uses log_softmax of the logits directly.
// ignore_class: labels equal to it contribute 0 and are left out of the mean (Keras's loss mask).
#include <optional>

#include "losses/loss.h"

namespace ember::losses {

struct SparseCategoricalCrossentropyOptions {
  bool from_logits = false;
  std::optional<int64_t> ignore_class = {};
  std::string reduction = "sum_over_batch_size";
  int64_t axis = -1;  // the class axis; as Keras's TensorFlow backend, only the last one is supported
  std::string name = {};   // empty: "sparse_categorical_crossentropy"
};

class SparseCategoricalCrossentropy : public Loss {
  EMBER_LOSS(SparseCategoricalCrossentropy)
  explicit SparseCategoricalCrossentropy(SparseCategoricalCrossentropyOptions options = {});
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
  nlohmann::json get_config() const override;
  Tensor call_with_mask(const Tensor& y_true, const Tensor& y_pred, Tensor* mask) const override;
  bool from_logits() const { return options_.from_logits; }

 private:
  SparseCategoricalCrossentropyOptions options_;
};

}  // namespace ember::losses
