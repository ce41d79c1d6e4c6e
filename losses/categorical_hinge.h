#pragma once
// CategoricalHinge (Keras: keras.losses.CategoricalHinge): max(neg - pos + 1, 0) with
// pos = sum(y_true * y_pred) and neg = max((1 - y_true) * y_pred) over the last axis, for one-hot labels
// (unlike Hinge, {0, 1} labels are not mapped to {-1, 1}).
#include "losses/loss.h"

namespace ember::losses {

class CategoricalHinge : public Loss {
  EMBER_LOSS(CategoricalHinge)
  // options.name empty: "categorical_hinge".
  explicit CategoricalHinge(LossOptions options = {});
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
};

}  // namespace ember::losses
