#pragma once
// LossMeanMetric: the base of the metrics that average a loss's per-sample values (Keras: a
// MeanMetricWrapper over a function of keras/src/losses/losses.py, e.g. keras.metrics.KLDivergence).
// The values come from the loss's call() in losses/ (looked up by class name in framework/model/loss_values.h,
// where losses/ registers them), so metric and loss share one formula.
#include "framework/model/loss_values.h"
#include "framework/model/metrics/reduction_metrics.h"

namespace ember::metrics {

// The mean over samples of loss.call(y_true, y_pred) (state "total" and "count", as Mean), the loss given
// as its values function (::ember::detail::make_loss_values). The loss's own name and reduction play no part.
class LossMeanMetric : public MeanMetricWrapper {
 protected:
  LossMeanMetric(std::string name, ::ember::detail::LossValuesFn loss_values);
  Tensor values(const Tensor& y_true, const Tensor& y_pred) const override;
  // The loss's values and its mask (SparseCategoricalCrossentropy's ignore_class).
  Tensor masked_values(const Tensor& y_true, const Tensor& y_pred, Tensor& mask) const override;

 private:
  ::ember::detail::LossValuesFn loss_values_;
};

}  // namespace ember::metrics
