#pragma once
// Regression metrics (Keras: keras/src/metrics/regression_metrics.py): MeanSquaredError,
// MeanAbsoluteError (means over samples of the per-sample losses), RootMeanSquaredError (the square
// root of the weighted mean squared error over every element), and MeanAbsolutePercentageError,
// CosineSimilarity and LogCoshError, the means of the per-sample values of the matching losses
// (losses/). R2Score is in r2_score.h.
#include "framework/model/metrics/loss_metric.h"
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

// 100 * mean(|y_true - y_pred| / max(|y_true|, 1e-7)) over the last axis (losses::MeanAbsolutePercentageError),
// averaged over samples. Default name "mean_absolute_percentage_error".
class MeanAbsolutePercentageError : public LossMeanMetric {
 public:
  explicit MeanAbsolutePercentageError(MetricOptions options = {});
  std::string class_name() const override { return "MeanAbsolutePercentageError"; }
  std::string direction() const override { return "down"; }
};

struct CosineSimilarityOptions {
  int64_t axis = -1;      // the axis along which the cosine is taken
  std::string name = {};  // empty: "cosine_similarity"
};

// sum(l2_normalize(y_true) * l2_normalize(y_pred)) along axis: the negative of losses::CosineSimilarity,
// averaged over samples. Default name "cosine_similarity".
class CosineSimilarity : public LossMeanMetric {
 public:
  explicit CosineSimilarity(CosineSimilarityOptions options = {});
  std::string class_name() const override { return "CosineSimilarity"; }
  std::string direction() const override { return "up"; }
  // Keras's keys plus "axis" (Keras 3.15 leaves it out, so its configs lose a non-default axis).
  nlohmann::json get_config() const override;

 protected:
  Tensor masked_values(const Tensor& y_true, const Tensor& y_pred, Tensor& mask) const override;

 private:
  int64_t axis_;
};

// mean((log(max(y_pred, 1e-7) + 1) - log(max(y_true, 1e-7) + 1))^2) over the last axis
// (losses::MeanSquaredLogarithmicError), averaged over samples. Default name "mean_squared_logarithmic_error".
class MeanSquaredLogarithmicError : public LossMeanMetric {
 public:
  explicit MeanSquaredLogarithmicError(MetricOptions options = {});
  std::string class_name() const override { return "MeanSquaredLogarithmicError"; }
  std::string direction() const override { return "down"; }
};

// mean(log(cosh(y_pred - y_true))) over the last axis (losses::LogCosh), averaged over samples. Default
// name "logcosh" (Keras's).
class LogCoshError : public LossMeanMetric {
 public:
  explicit LogCoshError(MetricOptions options = {});
  std::string class_name() const override { return "LogCoshError"; }
  std::string direction() const override { return "down"; }
};

}  // namespace ember::metrics
