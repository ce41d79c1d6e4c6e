#pragma once
// Top-k accuracies (Keras: TopKCategoricalAccuracy, SparseTopKCategoricalAccuracy): whether the true
// class is among the k highest predictions. Ties at the boundary count as in (TF's in_top_k), and a
// non-finite score of the true class, or a label outside [0, num_classes), counts as out.
#include "framework/model/metrics/reduction_metrics.h"

namespace ember::metrics {

struct TopKAccuracyOptions {
  int64_t k = 5;
  std::string name = {};  // empty: the class's Keras name
};

// One-hot labels; default name "top_k_categorical_accuracy".
class TopKCategoricalAccuracy : public MeanMetricWrapper {
 public:
  explicit TopKCategoricalAccuracy(TopKAccuracyOptions options = {});
  std::string class_name() const override { return "TopKCategoricalAccuracy"; }
  std::string direction() const override { return "up"; }
  nlohmann::json get_config() const override;

 protected:
  Tensor values(const Tensor& y_true, const Tensor& y_pred) const override;

 private:
  int64_t k_;
};

// Integer labels; default name "sparse_top_k_categorical_accuracy".
class SparseTopKCategoricalAccuracy : public MeanMetricWrapper {
 public:
  explicit SparseTopKCategoricalAccuracy(TopKAccuracyOptions options = {});
  std::string class_name() const override { return "SparseTopKCategoricalAccuracy"; }
  std::string direction() const override { return "up"; }
  nlohmann::json get_config() const override;

 protected:
  Tensor values(const Tensor& y_true, const Tensor& y_pred) const override;

 private:
  int64_t k_;
};

// TF's in_top_k: for targets [B] (integer) and predictions [B, C], whether predictions[b, targets[b]]
// has fewer than k strictly larger scores in its row; bool [B]. Runs on the device.
Tensor in_top_k(const Tensor& targets, const Tensor& predictions, int64_t k);

// The per-sample values (Keras: keras.metrics.top_k_categorical_accuracy, ...), float32.
Tensor top_k_categorical_accuracy(const Tensor& y_true, const Tensor& y_pred, int64_t k = 5);
Tensor sparse_top_k_categorical_accuracy(const Tensor& y_true, const Tensor& y_pred, int64_t k = 5);

}  // namespace ember::metrics
