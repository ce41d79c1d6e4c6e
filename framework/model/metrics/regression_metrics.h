#pragma once
// Regression metrics (Keras: keras/src/metrics/regression_metrics.py): MeanSquaredError,
// MeanAbsoluteError (means over samples of the per-sample losses) and RootMeanSquaredError (the square
// root of the weighted mean squared error over every element).
#include "framework/model/metrics/reduction_metrics.h"

namespace ember::metrics {

// mean((y_true - y_pred)^2) over the last axis, averaged over samples. Default name "mean_squared_error".
class MeanSquaredError : public MeanMetricWrapper {
 public:
  explicit MeanSquaredError(MetricOptions options = {});
  std::string class_name() const override { return "MeanSquaredError"; }
  std::string direction() const override { return "down"; }

 protected:
  Tensor values(const Tensor& y_true, const Tensor& y_pred) const override;
};

// mean(|y_true - y_pred|) over the last axis, averaged over samples. Default name "mean_absolute_error".
class MeanAbsoluteError : public MeanMetricWrapper {
 public:
  explicit MeanAbsoluteError(MetricOptions options = {});
  std::string class_name() const override { return "MeanAbsoluteError"; }
  std::string direction() const override { return "down"; }

 protected:
  Tensor values(const Tensor& y_true, const Tensor& y_pred) const override;
};

// sqrt(weighted mean of (y_pred - y_true)^2). Default name "root_mean_squared_error".
class RootMeanSquaredError : public Metric {
 public:
  explicit RootMeanSquaredError(MetricOptions options = {});
  Tensor result() const override;
  std::string class_name() const override { return "RootMeanSquaredError"; }
  std::string direction() const override { return "down"; }

 protected:
  void update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override;

 private:
  Variable total_, count_;
};

}  // namespace ember::metrics
