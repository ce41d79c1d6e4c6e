#pragma once
// Tversky (Keras: keras.losses.Tversky): 1 - TP / (TP + alpha * FP + beta * FN + 1e-7) with TP = sum(y_true *
// y_pred), FP = sum((1 - y_pred) * y_true), FN = sum(y_pred * (1 - y_true)) over axis (all axes by default);
// alpha = beta = 0.5 is Dice (Salehi et al., 2017).
#include "losses/loss.h"

namespace ember::losses {

// Keras's argument order: alpha, beta, reduction, name, axis.
struct TverskyOptions {
  double alpha = 0.5;  // the weight of the FP term, sum((1 - y_pred) * y_true) as Keras writes it
  double beta = 0.5;   // the weight of the FN term, sum(y_pred * (1 - y_true))
  std::string reduction = "sum_over_batch_size";
  std::string name = {};  // empty: "tversky"
  AxisOption axis = {};   // the axes summed over (`.axis = {1, 2, 3}`); unset: all (Keras's None)
};

class Tversky : public Loss {
  EMBER_LOSS(Tversky)
  explicit Tversky(TverskyOptions options = {});
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
  nlohmann::json get_config() const override;

 private:
  TverskyOptions options_;
};

}  // namespace ember::losses
