#pragma once
// The metrics that hold one rate at a minimum and report the best other rate (Keras:
// SensitivitySpecificityBase and its four subclasses in keras/src/metrics/confusion_metrics.py):
// SensitivityAtSpecificity, SpecificityAtSensitivity, PrecisionAtRecall and RecallAtPrecision. Each
// accumulates the four confusion counts over num_thresholds thresholds (0, 1/(n-1), ..., 1; 0.5 when
// n == 1) and reports the largest dependent rate over the thresholds whose constrained rate is at
// least the target (0 if none is).
#include <optional>
#include <vector>

#include "framework/model/metrics/metric.h"

namespace ember::metrics {

struct ThresholdSweepOptions {
  int64_t num_thresholds = 200;         // > 0
  std::optional<int64_t> class_id = {};  // only this column of (num_samples, num_classes) inputs
  std::string name = {};                 // empty: the class's snake_case name
};

// Keras's SensitivitySpecificityBase: state true_positives, false_positives, true_negatives,
// false_negatives, one entry per threshold.
class SensitivitySpecificityBase : public Metric {
 public:
  std::string direction() const override { return "up"; }
  // Keras's config: name, dtype, class_id, num_thresholds and the target under its own key.
  nlohmann::json get_config() const override;
  const std::vector<double>& thresholds() const { return thresholds_; }

 protected:
  // value: the target rate, checked to lie in [0, 1] and named value_key in errors and configs.
  SensitivitySpecificityBase(double value, ThresholdSweepOptions options, const char* default_name,
                             const char* class_name, const char* value_key);
  void update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override;
  // The largest `dependent` where `constrained` >= the target, 0 if there is none (Keras's
  // _find_max_under_constraint with greater_equal).
  Tensor max_under_constraint(const Tensor& constrained, const Tensor& dependent) const;
  Tensor sensitivities() const;  // tp / (tp + fn), i.e. recall
  Tensor specificities() const;  // tn / (tn + fp)
  Tensor precisions() const;     // tp / (tp + fp)

 private:
  double value_;
  const char* value_key_;
  ThresholdSweepOptions options_;
  std::vector<double> thresholds_;
  Variable true_positives_, false_positives_, true_negatives_, false_negatives_;
};

// The best sensitivity (recall) at a specificity >= specificity. Default name "sensitivity_at_specificity".
class SensitivityAtSpecificity : public SensitivitySpecificityBase {
 public:
  explicit SensitivityAtSpecificity(double specificity, ThresholdSweepOptions options = {});
  Tensor result() const override;
  std::string class_name() const override { return "SensitivityAtSpecificity"; }
};

// The best specificity at a sensitivity (recall) >= sensitivity. Default name "specificity_at_sensitivity".
class SpecificityAtSensitivity : public SensitivitySpecificityBase {
 public:
  explicit SpecificityAtSensitivity(double sensitivity, ThresholdSweepOptions options = {});
  Tensor result() const override;
  std::string class_name() const override { return "SpecificityAtSensitivity"; }
};

// The best precision at a recall >= recall. Default name "precision_at_recall".
class PrecisionAtRecall : public SensitivitySpecificityBase {
 public:
  explicit PrecisionAtRecall(double recall, ThresholdSweepOptions options = {});
  Tensor result() const override;
  std::string class_name() const override { return "PrecisionAtRecall"; }
};

// The best recall at a precision >= precision. Default name "recall_at_precision".
class RecallAtPrecision : public SensitivitySpecificityBase {
 public:
  explicit RecallAtPrecision(double precision, ThresholdSweepOptions options = {});
  Tensor result() const override;
  std::string class_name() const override { return "RecallAtPrecision"; }
};

}  // namespace ember::metrics
