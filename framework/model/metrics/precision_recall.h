#pragma once
// Precision and Recall (Keras: keras.metrics.Precision / Recall): tp / (tp + fp) and tp / (tp + fn)
// accumulated per threshold (a prediction above the threshold is positive; a label counts as positive
// when non-zero). result() is a scalar for one threshold, else one value per threshold.
#include <optional>
#include <vector>

#include "framework/model/metrics/metric.h"

namespace ember::metrics {

struct PrecisionRecallOptions {
  // Thresholds in [0, 1]; none: 0.5, or with top_k Keras's -1e10 (every top-k entry is positive).
  std::optional<std::vector<double>> thresholds = {};
  // Only the k highest scores of each row may count as positive.
  std::optional<int64_t> top_k = {};
  // Only this column (class) of (num_samples, num_classes) inputs is measured.
  std::optional<int64_t> class_id = {};
  std::string name = {};  // empty: "precision" / "recall"
};

// tp / (tp + fp), 0 when nothing was predicted positive. State: true_positives, false_positives.
class Precision : public Metric {
 public:
  explicit Precision(PrecisionRecallOptions options = {});
  Tensor result() const override;
  std::string class_name() const override { return "Precision"; }
  std::string direction() const override { return "up"; }
  nlohmann::json get_config() const override;
  const std::vector<double>& thresholds() const { return thresholds_; }

 protected:
  void update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override;

 private:
  PrecisionRecallOptions options_;
  std::vector<double> thresholds_;
  bool evenly_;
  Variable true_positives_, false_positives_;
};

// tp / (tp + fn), 0 when there were no positive labels. State: true_positives, false_negatives.
class Recall : public Metric {
 public:
  explicit Recall(PrecisionRecallOptions options = {});
  Tensor result() const override;
  std::string class_name() const override { return "Recall"; }
  std::string direction() const override { return "up"; }
  nlohmann::json get_config() const override;
  const std::vector<double>& thresholds() const { return thresholds_; }

 protected:
  void update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override;

 private:
  PrecisionRecallOptions options_;
  std::vector<double> thresholds_;
  bool evenly_;
  Variable true_positives_, false_negatives_;
};

}  // namespace ember::metrics
