#pragma once
// LossMeanMetric: the base of the metrics that average a loss's per-sample values (Keras: a
// MeanMetricWrapper over a function of keras/src/losses/losses.py, e.g. keras.metrics.KLDivergence).
// The values come from the loss's call() in losses/, so metric and loss share one formula.
#include <memory>

#include "framework/model/metrics/reduction_metrics.h"

namespace ember::losses {
class Loss;
}

namespace ember::metrics {

// The mean over samples of loss.call(y_true, y_pred) (state "total" and "count", as Mean). The loss's
// own name and reduction play no part.
class LossMeanMetric : public MeanMetricWrapper {
 protected:
  LossMeanMetric(std::string name, std::shared_ptr<const losses::Loss> loss);
  Tensor values(const Tensor& y_true, const Tensor& y_pred) const override;
  // The loss's values and its mask (SparseCategoricalCrossentropy's ignore_class).
  Tensor masked_values(const Tensor& y_true, const Tensor& y_pred, Tensor& mask) const override;
  const losses::Loss& loss() const { return *loss_; }

 private:
  std::shared_ptr<const losses::Loss> loss_;
};

}  // namespace ember::metrics
