#pragma once
// MeanAbsolutePercentageError (Keras: keras.losses.MeanAbsolutePercentageError): 100 * mean of |(y_true - y_pred) / max(|y_true|, 1e-7)| over the last axis.
#include "losses/loss.h"

namespace ember::losses {

class MeanAbsolutePercentageError : public Loss {
  EMBER_LOSS(MeanAbsolutePercentageError)
  // options.name empty: "mean_absolute_percentage_error".
  explicit MeanAbsolutePercentageError(LossOptions options = {});
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
};

}  // namespace ember::losses
