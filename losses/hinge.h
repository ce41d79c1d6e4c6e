#pragma once
// Hinge (Keras: keras.losses.Hinge): mean of max(1 - y_true * y_pred, 0) over the last axis; labels all in {0, 1} become {-1, 1}.
#include "losses/loss.h"

namespace ember::losses {

class Hinge : public Loss {
  EMBER_LOSS(Hinge)
  // options.name empty: "hinge".
  explicit Hinge(LossOptions options = {});
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
};

}  // namespace ember::losses
