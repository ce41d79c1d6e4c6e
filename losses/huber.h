#pragma once
// Huber (Keras: keras.losses.Huber): mean over the last axis of 0.5 * e^2 where |e| <= delta, else
// delta * |e| - 0.5 * delta^2, e = y_pred - y_true.
#include "losses/loss.h"

namespace ember::losses {

struct HuberOptions {
  double delta = 1.0;
  std::string reduction = "sum_over_batch_size";
  std::string name = {};  // empty: "huber_loss"
};

class Huber : public Loss {
  EMBER_LOSS(Huber)
  explicit Huber(HuberOptions options = {});
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
  // Keras's keys plus "delta" (Keras 3.15 leaves it out of get_config, losing it on a round trip).
  nlohmann::json get_config() const override;
  double delta() const { return delta_; }

 private:
  double delta_;
};

}  // namespace ember::losses
