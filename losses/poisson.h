#pragma once
// Poisson (Keras: keras.losses.Poisson): mean over the last axis of y_pred - y_true * log(y_pred + 1e-7).
#include "losses/loss.h"

namespace ember::losses {

class Poisson : public Loss {
  EMBER_LOSS(Poisson)
  // options.name empty: "poisson".
  explicit Poisson(LossOptions options = {});
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
};

}  // namespace ember::losses
