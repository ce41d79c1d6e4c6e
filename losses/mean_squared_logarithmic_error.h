#pragma once
// MeanSquaredLogarithmicError (Keras: keras.losses.MeanSquaredLogarithmicError): mean over the last axis
// of (log(max(y_pred, 1e-7) + 1) - log(max(y_true, 1e-7) + 1))^2.
#include "losses/loss.h"

namespace ember::losses {

class MeanSquaredLogarithmicError : public Loss {
  EMBER_LOSS(MeanSquaredLogarithmicError)
  // options.name empty: "mean_squared_logarithmic_error".
  explicit MeanSquaredLogarithmicError(LossOptions options = {});
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
};

}  // namespace ember::losses
