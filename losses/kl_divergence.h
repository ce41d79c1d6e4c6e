#pragma once
// KLDivergence (Keras: keras.losses.KLDivergence): sum of y_true * log(y_true / y_pred) over the last axis, both clipped to [1e-7, 1].
#include "losses/loss.h"

namespace ember::losses {

class KLDivergence : public Loss {
  EMBER_LOSS(KLDivergence)
  // options.name empty: "kl_divergence".
  explicit KLDivergence(LossOptions options = {});
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
};

}  // namespace ember::losses
