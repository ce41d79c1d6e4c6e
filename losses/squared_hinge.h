#pragma once
// SquaredHinge (Keras: keras.losses.SquaredHinge): mean of max(1 - y_true * y_pred, 0)^2 over the last axis;
// labels all in {0, 1} become {-1, 1}.
#include "losses/loss.h"

namespace ember::losses {

class SquaredHinge : public Loss {
  EMBER_LOSS(SquaredHinge)
  // options.name empty: "squared_hinge".
  explicit SquaredHinge(LossOptions options = {});
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
};

}  // namespace ember::losses
