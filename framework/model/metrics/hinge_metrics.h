#pragma once
// Hinge metrics (Keras: keras/src/metrics/hinge_metrics.py): the means over samples of the per-sample
// values of the hinge losses (losses/).
#include "framework/model/metrics/loss_metric.h"

namespace ember::metrics {

// mean(max(1 - y_true * y_pred, 0)) over the last axis, labels all in {0, 1} taken as {-1, 1}
// (losses::Hinge), averaged over samples. Default name "hinge".
class Hinge : public LossMeanMetric {
 public:
  explicit Hinge(MetricOptions options = {});
  std::string class_name() const override { return "Hinge"; }
  std::string direction() const override { return "down"; }
};

// mean(max(1 - y_true * y_pred, 0)^2) over the last axis, labels as Hinge's (losses::SquaredHinge),
// averaged over samples. Default name "squared_hinge".
class SquaredHinge : public LossMeanMetric {
 public:
  explicit SquaredHinge(MetricOptions options = {});
  std::string class_name() const override { return "SquaredHinge"; }
  std::string direction() const override { return "down"; }
};

// max(max((1 - y_true) * y_pred) - sum(y_true * y_pred) + 1, 0) over the last axis
// (losses::CategoricalHinge), averaged over samples. Default name "categorical_hinge".
class CategoricalHinge : public LossMeanMetric {
 public:
  explicit CategoricalHinge(MetricOptions options = {});
  std::string class_name() const override { return "CategoricalHinge"; }
  std::string direction() const override { return "down"; }
};

}  // namespace ember::metrics
