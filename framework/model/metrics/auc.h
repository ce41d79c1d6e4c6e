#pragma once
// AUC (Keras: keras.metrics.AUC): the area under the ROC or precision-recall curve, approximated over
// num_thresholds thresholds (Keras's algorithm exactly: thresholds i / (n - 1) with the end points
// moved to -1e-7 and 1 + 1e-7, bucketed counts, Riemann sums; PR with interpolation uses Davis &
// Goadrich's interpolated precision). By default every element of y_pred is one prediction (the data
// is flattened); with multi_label, y_pred is [samples, labels] and each label gets its own curve, the
// result being the mean of the label AUCs (weighted by label_weights when given).
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
  bool multi_label = false;                    // one AUC per label column of a rank-2 y_pred, then their mean
  // With multi_label: the number of labels, so the state is built at once (else at the first update).
  // 0 counts as not given (Keras's `if num_labels:`); without multi_label only 0 is allowed (as Keras).
  std::optional<int64_t> num_labels = {};
  // One non-negative weight per label. multi_label: the weights of the label AUCs' mean (divide_no_nan
  // by their sum); otherwise: each flattened entry is weighted by its label's (column's) weight.
  std::optional<std::vector<double>> label_weights = {};
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
  // The label count of a multi-label AUC's state: 0 until it is built (at construction with num_labels,
  // else at the first update).
  int64_t built_num_labels() const { return num_labels_; }

 protected:
  void update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override;

 private:
  // Creates the four accumulators: [T], or [T, labels] with multi_label.
  void build(int64_t labels);
  Tensor interpolate_pr_auc() const;
  // The AUC from the Riemann terms [T - 1] (their sum) or [T - 1, L] (the mean of the per-label sums,
  // weighted by label_weights when given).
  Tensor sum_terms(const Tensor& terms) const;

  AUCOptions options_;
  std::vector<double> thresholds_;
  bool evenly_ = true;
  bool built_ = false;
  int64_t num_labels_ = 0;  // multi_label: the label count the state was built for
  Tensor label_weights_;    // float32 [labels] when given
  Variable true_positives_, false_positives_, true_negatives_, false_negatives_;
};

}  // namespace ember::metrics
