#pragma once
// Accuracy metrics (Keras: keras/src/metrics/accuracy_metrics.py): the mean over samples of whether
// the prediction is right, each with its own notion of "right".
#include "framework/model/metrics/reduction_metrics.h"

namespace ember::metrics {

// y_true == y_pred exactly (after the squeeze/expand rank rule). Default name "accuracy".
class Accuracy : public MeanMetricWrapper {
 public:
  explicit Accuracy(MetricOptions options = {});
  std::string class_name() const override { return "Accuracy"; }
  std::string direction() const override { return "up"; }

 protected:
  Tensor values(const Tensor& y_true, const Tensor& y_pred) const override;
};

struct BinaryAccuracyOptions {
  std::string name = {};        // empty: "binary_accuracy"
  double threshold = 0.5;  // y_pred > threshold counts as 1
};

// y_true == (y_pred > threshold). Default name "binary_accuracy".
class BinaryAccuracy : public MeanMetricWrapper {
 public:
  explicit BinaryAccuracy(BinaryAccuracyOptions options = {});
  std::string class_name() const override { return "BinaryAccuracy"; }
  std::string direction() const override { return "up"; }
  nlohmann::json get_config() const override;

 protected:
  Tensor values(const Tensor& y_true, const Tensor& y_pred) const override;

 private:
  double threshold_;
};

// argmax(y_true) == argmax(y_pred) over the last axis, for one-hot labels (first index on ties).
// Default name "categorical_accuracy".
class CategoricalAccuracy : public MeanMetricWrapper {
 public:
  explicit CategoricalAccuracy(MetricOptions options = {});
  std::string class_name() const override { return "CategoricalAccuracy"; }
  std::string direction() const override { return "up"; }

 protected:
  Tensor values(const Tensor& y_true, const Tensor& y_pred) const override;
};

// y_true == argmax(y_pred) over the last axis, for integer labels (a trailing 1 is squeezed).
// Default name "sparse_categorical_accuracy".
class SparseCategoricalAccuracy : public MeanMetricWrapper {
 public:
  explicit SparseCategoricalAccuracy(MetricOptions options = {});
  std::string class_name() const override { return "SparseCategoricalAccuracy"; }
  std::string direction() const override { return "up"; }

 protected:
  Tensor values(const Tensor& y_true, const Tensor& y_pred) const override;
};

// The per-sample values of the accuracy functions (Keras: keras.metrics.binary_accuracy, ...), float32.
Tensor accuracy(const Tensor& y_true, const Tensor& y_pred);
Tensor binary_accuracy(const Tensor& y_true, const Tensor& y_pred, double threshold = 0.5);
Tensor categorical_accuracy(const Tensor& y_true, const Tensor& y_pred);
Tensor sparse_categorical_accuracy(const Tensor& y_true, const Tensor& y_pred);

}  // namespace ember::metrics
