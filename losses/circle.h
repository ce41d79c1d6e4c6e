#pragma once
// Circle (Keras: keras.losses.Circle): the circle loss of Sun et al., 2020 over the batch's pairs, for
// L2-normalised embeddings y_pred [N, D] and integer labels y_true [N] (or [N, 1]): per sample,
// softplus(logsumexp of the weighted positive-pair terms + logsumexp of the negative-pair ones), with
// cosine distances 1 - y_pred y_pred^T. Samples whose loss is 0 (no positive pair) are left out of the
// mean, as Keras's loss mask does.
#include "losses/loss.h"

namespace ember::losses {

struct CircleOptions {
  double gamma = 80.0;          // the scale of the pair terms
  double margin = 0.4;          // the relaxation: optima 1 + margin / -margin, decision margins 1 - margin / margin
  bool remove_diagonal = true;  // leave each sample's pair with itself out of its positives
  std::string reduction = "sum_over_batch_size";
  std::string name = {};  // empty: "circle"
};

class Circle : public Loss {
  EMBER_LOSS(Circle)
  explicit Circle(CircleOptions options = {});
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
  nlohmann::json get_config() const override;

 protected:
  Tensor call_with_mask(const Tensor& y_true, const Tensor& y_pred, Tensor* mask) const override;

 private:
  CircleOptions options_;
};

}  // namespace ember::losses
