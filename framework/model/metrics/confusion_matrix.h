#pragma once
// Keras's confusion-matrix accumulation (keras/src/metrics/metrics_utils.py), shared by Precision,
// Recall, AUC, the four confusion counts and the metrics at a fixed sensitivity/specificity/precision/recall: counts of true/false positives/negatives per threshold, weighted, added to Variables.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/autodiff/variable.h"
#include "framework/core/tensor.h"

namespace ember::metrics::detail {

// Keras's NEG_INF: the score given to entries outside the top k, and Precision/Recall's default
// threshold with top_k.
inline constexpr double kNegInf = -1e10;

// The accumulators to update (null: not tracked by the metric); each has one entry per threshold, or
// [thresholds, labels] entries with multi_label.
struct ConfusionVariables {
  Variable* true_positives = nullptr;
  Variable* false_positives = nullptr;
  Variable* true_negatives = nullptr;
  Variable* false_negatives = nullptr;
};

// Keras's is_evenly_distributed_thresholds: at least 3 thresholds within np.allclose (atol 1e-7,
// rtol 1e-5) of i / (n - 1) computed in float32.
bool is_evenly_distributed_thresholds(const std::vector<double>& thresholds);

// Throws InvalidArgument naming who unless every threshold lies in [0, 1].
void check_thresholds_range(const std::vector<double>& thresholds, const std::string& who);

// Keras's parse_init_thresholds: the given thresholds (not empty, each in [0, 1]), or {default_threshold}.
std::vector<double> parse_init_thresholds(const std::optional<std::vector<double>>& thresholds,
                                          double default_threshold, const std::string& who);

// A config's "thresholds" as Keras writes it: absent or null, one number, or a list of numbers.
std::optional<std::vector<double>> config_thresholds(const nlohmann::json& config, const std::string& who);

// Keras's update_confusion_matrix_variables: y_true and y_pred (squeezed/expanded to the same rank,
// cast to float32; a label counts as positive when non-zero), optionally restricted to the top_k
// scores per row and to column class_id, compared with every threshold (prediction > threshold is
// positive), weighted by sample_weight, and added to vars. Evenly spaced thresholds use Keras's bucket
// algorithm (clip to [0, 1], bucket = ceil(p * (n - 1)) - 1, with the first bucket absorbing -1 when
// the end thresholds carry the +-epsilon), so results match Keras bit for bit in the counts.
// Without multi_label every entry is one prediction (the data is flattened); label_weights (float32,
// one per column of y_pred's last axis, or a single one) then weight each entry by its column, as
// Keras broadcasts them. With multi_label, y_pred must be [N, L] (a y_pred of [N, 1] against a y_true
// of [N] is one label) and vars are [thresholds, L], counted per label; label_weights must then be
// undefined (AUC applies them when averaging the label AUCs).
void update_confusion_matrix_variables(const ConfusionVariables& vars, const Tensor& y_true, const Tensor& y_pred,
                                       const std::vector<double>& thresholds, bool thresholds_distributed_evenly,
                                       const Tensor& sample_weight, std::optional<int64_t> top_k,
                                       std::optional<int64_t> class_id, const std::string& who,
                                       bool multi_label = false, const Tensor& label_weights = {});

// Keras's _filter_top_k: x where x is among the k largest of its last axis (lower index first on
// ties, as tf.math.top_k), kNegInf elsewhere.
Tensor filter_top_k(const Tensor& x, int64_t k);

}  // namespace ember::metrics::detail
