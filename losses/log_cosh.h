#pragma once
// LogCosh (Keras: keras.losses.LogCosh): mean of log(cosh(y_pred - y_true)) over the last axis, as x + softplus(-2x) - log 2.
#include "losses/loss.h"

namespace ember::losses {

class LogCosh : public Loss {
  EMBER_LOSS(LogCosh)
  // options.name empty: "log_cosh".
  explicit LogCosh(LossOptions options = {});
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
};

}  // namespace ember::losses
