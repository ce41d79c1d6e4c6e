#pragma once
// Ember's metrics (Keras: keras.metrics): the Metric base, every metric class, and metrics::get, which
// resolves names as Keras's compile does ("accuracy" picks the variant that fits the loss).
#include <initializer_list>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "framework/model/metrics/accuracy_metrics.h"
#include "framework/model/metrics/auc.h"
#include "framework/model/metrics/confusion_counts.h"
#include "framework/model/metrics/f_score.h"
#include "framework/model/metrics/hinge_metrics.h"
#include "framework/model/metrics/loss_metric.h"
#include "framework/model/metrics/metric.h"
#include "framework/model/metrics/precision_recall.h"
#include "framework/model/metrics/probabilistic_metrics.h"
#include "framework/model/metrics/r2_score.h"
#include "framework/model/metrics/reduction_metrics.h"
#include "framework/model/metrics/regression_metrics.h"
#include "framework/model/metrics/sensitivity_specificity.h"
#include "framework/model/metrics/top_k_accuracy.h"

namespace ember::losses {
class Loss;
}

namespace ember::metrics {

// A metric for a compile identifier (Keras: compile_utils.get_metric), named after the identifier.
// Names, as Keras 3's keras.metrics.get takes them: the class names ("AUC", "SparseCategoricalAccuracy"),
// their snake_case forms ("auc", "sparse_categorical_accuracy", "log_cosh_error", "f_beta_score") and
// "mse"/"MSE", "mae"/"MAE", "mape"/"MAPE", "bce"/"BCE" (no "kld" or "logcosh": Keras's metrics.get
// refuses them; they are loss names). A metric that needs an argument (PrecisionAtRecall's recall, ...) cannot be
// made from its name alone: InvalidArgument. "accuracy" and "acc" (any case) pick
// the accuracy that fits: SparseCategoricalAccuracy with a SparseCategoricalCrossentropy loss,
// BinaryAccuracy with BinaryCrossentropy, CategoricalAccuracy with CategoricalCrossentropy; with no
// loss or another one, the choice is made at the first update_state from the shapes, by Keras 3's
// rule (y_pred's last dimension 1: binary; y_true of lower rank, or a last dimension of 1 against
// more than one class: sparse; otherwise categorical). Unknown names: InvalidArgument listing them.
MetricPtr get(const std::string& identifier, const losses::Loss* loss = nullptr);
// {"class_name", "config"} (Keras: keras.metrics.serialize, without module fields).
nlohmann::json serialize(const Metric& metric);
// The metric a {"class_name", "config"} object describes (config keys as Keras writes them).
MetricPtr deserialize(const nlohmann::json& j);

namespace detail {
using MetricFactory = MetricPtr (*)(const nlohmann::json& config);
// Registers a class (and snake_case names/aliases) at static-init time; each class does it in its .cpp.
bool register_metric(const char* class_name, MetricFactory factory, std::initializer_list<const char*> aliases = {});
// Checks config's keys ("name", "dtype" and extra) and returns its name (default_name when absent);
// "dtype" must be null or "float32".
std::string read_metric_base(const nlohmann::json& config, const std::string& class_name, const char* default_name,
                             std::initializer_list<const char*> extra = {});
}  // namespace detail

}  // namespace ember::metrics
