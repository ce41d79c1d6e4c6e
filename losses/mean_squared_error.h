#pragma once
// MeanSquaredError (Keras: keras.losses.MeanSquaredError): mean of (y_true - y_pred)^2 over the last axis.
#include "losses/loss.h"

namespace ember::losses {

class MeanSquaredError : public Loss {
  EMBER_LOSS(MeanSquaredError)
  // options.name empty: "mean_squared_error".
  explicit MeanSquaredError(LossOptions options = {});
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
};

}  // namespace ember::losses
