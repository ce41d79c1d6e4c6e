#pragma once
// The confusion counts (Keras: keras.metrics.TruePositives, FalsePositives, TrueNegatives,
// FalseNegatives): the weighted number of predictions in one cell of the confusion matrix, per
// threshold (a prediction above the threshold is positive; a label counts as positive when non-zero).
// result() is a scalar for one threshold, else one count per threshold.
#include <optional>
#include <vector>

#include "framework/model/metrics/metric.h"

namespace ember::metrics {

struct ConfusionCountOptions {
  // Thresholds in [0, 1]; none: 0.5.
  std::optional<std::vector<double>> thresholds = {};
  std::string name = {};  // empty: the class's snake_case name ("true_positives", ...)
};

// Keras's _ConfusionMatrixConditionCount: one accumulator ("accumulator", one entry per threshold).
class ConfusionCount : public Metric {
 public:
  Tensor result() const override;
  // Keras's config: name, dtype, thresholds (as given, or null).
  nlohmann::json get_config() const override;
  const std::vector<double>& thresholds() const { return thresholds_; }

 protected:
  enum class Cell { TruePositives, FalsePositives, TrueNegatives, FalseNegatives };
  ConfusionCount(ConfusionCountOptions options, const char* default_name, const char* class_name, Cell cell);
  void update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override;

 private:
  ConfusionCountOptions options_;
  std::vector<double> thresholds_;
  bool evenly_;
  Cell cell_;
  Variable accumulator_;
};

// Labels positive, predictions positive. Default name "true_positives".
class TruePositives : public ConfusionCount {
 public:
  explicit TruePositives(ConfusionCountOptions options = {});
  std::string class_name() const override { return "TruePositives"; }
};

// Labels negative, predictions positive. Default name "false_positives".
class FalsePositives : public ConfusionCount {
 public:
  explicit FalsePositives(ConfusionCountOptions options = {});
  std::string class_name() const override { return "FalsePositives"; }
};

// Labels negative, predictions negative. Default name "true_negatives".
class TrueNegatives : public ConfusionCount {
 public:
  explicit TrueNegatives(ConfusionCountOptions options = {});
  std::string class_name() const override { return "TrueNegatives"; }
};

// Labels positive, predictions negative. Default name "false_negatives".
class FalseNegatives : public ConfusionCount {
 public:
  explicit FalseNegatives(ConfusionCountOptions options = {});
  std::string class_name() const override { return "FalseNegatives"; }
};

}  // namespace ember::metrics
