#pragma once
// AUC (Keras: keras.metrics.AUC): the area under the ROC or precision-recall curve, approximated over
// num_thresholds thresholds (Keras's algorithm exactly: thresholds i / (n - 1) with the end points
// moved to -1e-7 and 1 + 1e-7, bucketed counts, Riemann sums; PR with interpolation uses Davis &
// Goadrich's interpolated precision). Single-label: every element of y_pred is one prediction.
#include <optional>
#include <vector>

#include "framework/model/metrics/metric.h"

namespace ember::metrics {

struct AUCOptions {
  int64_t num_thresholds = 200;                // > 1; ignored when thresholds are given
  std::string curve = "ROC";                   // "ROC", "PR" or "PRGAIN" (lower case accepted)
  std::string summation_method = "interpolation";  // "interpolation", "majoring" or "minoring"
  std::string name = {};                            // empty: "auc"
  std::optional<std::vector<double>> thresholds = {};  // explicit thresholds in [0, 1] (then n = size + 2)
  bool from_logits = false;                    // apply a sigmoid to y_pred first
};

class AUC : public Metric {
 public:
  explicit AUC(AUCOptions options = {});
  Tensor result() const override;
  std::string class_name() const override { return "AUC"; }
  std::string direction() const override { return "up"; }
  nlohmann::json get_config() const override;
  // Every threshold, the -1e-7 and 1 + 1e-7 end points included.
  const std::vector<double>& thresholds() const { return thresholds_; }
  int64_t num_thresholds() const { return static_cast<int64_t>(thresholds_.size()); }

 protected:
  void update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override;

 private:
  Tensor interpolate_pr_auc() const;

  AUCOptions options_;
  std::vector<double> thresholds_;
  bool evenly_ = true;
  Variable true_positives_, false_positives_, true_negatives_, false_negatives_;
};

}  // namespace ember::metrics
