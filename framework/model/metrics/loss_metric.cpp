// LossMeanMetric (keras/src/metrics/reduction_metrics.py MeanMetricWrapper over a loss function).
#include "framework/model/metrics/loss_metric.h"

#include "losses/loss.h"

namespace ember::metrics {

LossMeanMetric::LossMeanMetric(std::string name, std::shared_ptr<const losses::Loss> loss)
    : MeanMetricWrapper(std::move(name)), loss_(std::move(loss)) {}

Tensor LossMeanMetric::values(const Tensor& y_true, const Tensor& y_pred) const {
  Tensor mask;
  return masked_values(y_true, y_pred, mask);
}

Tensor LossMeanMetric::masked_values(const Tensor& y_true, const Tensor& y_pred, Tensor& mask) const {
  return loss_->call_with_mask(y_true, y_pred, &mask);
}

}  // namespace ember::metrics
