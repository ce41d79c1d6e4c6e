#pragma once
// CategoricalGeneralizedCrossEntropy (Keras: keras.losses.CategoricalGeneralizedCrossEntropy): the
// noise-robust (1 - p^q) / q of Zhang and Sabuncu, 2018, p = y_pred's probability of the true class, for
// integer labels of shape y_pred.shape[:-1] (a trailing 1 is squeezed). q -> 0 approaches crossentropy,
// q -> 1 mean absolute error. As in Keras, y_pred is used as it is (no clipping or renormalisation), and a
// label outside [0, num_classes) gives p = 0.
#include "losses/loss.h"

namespace ember::losses {

struct CategoricalGeneralizedCrossEntropyOptions {
  double q = 0.5;  // in (0, 1)
  std::string reduction = "sum_over_batch_size";
  std::string name = {};  // empty: "categorical_generalized_cross_entropy"
};

class CategoricalGeneralizedCrossEntropy : public Loss {
  EMBER_LOSS(CategoricalGeneralizedCrossEntropy)
  explicit CategoricalGeneralizedCrossEntropy(CategoricalGeneralizedCrossEntropyOptions options = {});
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
  nlohmann::json get_config() const override;

 private:
  double q_;
};

}  // namespace ember::losses
