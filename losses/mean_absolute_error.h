#pragma once
// MeanAbsoluteError (Keras: keras.losses.MeanAbsoluteError): mean of |y_true - y_pred| over the last axis.
#include "losses/loss.h"

namespace ember::losses {

class MeanAbsoluteError : public Loss {
  EMBER_LOSS(MeanAbsoluteError)
  // options.name empty: "mean_absolute_error".
  explicit MeanAbsoluteError(LossOptions options = {});
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
};

}  // namespace ember::losses
