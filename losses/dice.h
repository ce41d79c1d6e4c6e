#pragma once
// Dice (Keras: keras.losses.Dice): 1 - 2 * sum(y_true * y_pred) / (sum(y_true) + sum(y_pred) + 1e-7), the
// sums over axis (all axes by default, giving one scalar for the batch), for segmentation masks.
#include "losses/loss.h"

namespace ember::losses {

// Keras's argument order: reduction, name, axis.
struct DiceOptions {
  std::string reduction = "sum_over_batch_size";
  std::string name = {};  // empty: "dice"
  AxisOption axis = {};   // the axes summed over (`.axis = {1, 2, 3}`); unset: all (Keras's None)
};

class Dice : public Loss {
  EMBER_LOSS(Dice)
  explicit Dice(DiceOptions options = {});
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
  nlohmann::json get_config() const override;

 private:
  AxisOption axis_;
};

}  // namespace ember::losses
