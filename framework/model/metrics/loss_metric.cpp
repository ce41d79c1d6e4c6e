// LossMeanMetric (keras/src/metrics/reduction_metrics.py MeanMetricWrapper over a loss function).
#include "framework/model/metrics/loss_metric.h"

namespace ember::metrics {

LossMeanMetric::LossMeanMetric(std::string name, ::ember::detail::LossValuesFn loss_values)
    : MeanMetricWrapper(std::move(name)), loss_values_(std::move(loss_values)) {}

Tensor LossMeanMetric::values(const Tensor& y_true, const Tensor& y_pred) const {
  Tensor mask;
  return masked_values(y_true, y_pred, mask);
}

Tensor LossMeanMetric::masked_values(const Tensor& y_true, const Tensor& y_pred, Tensor& mask) const {
  return loss_values_(y_true, y_pred, &mask);
}

}  // namespace ember::metrics
