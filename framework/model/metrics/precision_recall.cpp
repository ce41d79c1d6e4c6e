// Precision and Recall (keras/src/metrics/confusion_metrics.py).
#include "framework/model/metrics/precision_recall.h"

#include "framework/core/config_reader.h"
#include "framework/core/error.h"
#include "framework/model/metrics/confusion_matrix.h"
#include "framework/model/metrics/metrics.h"
#include "framework/ops/array.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/tensor_helpers.h"

namespace ember::metrics {

namespace {

// Keras's parse_init_thresholds: the given ones, or 0.5 (with top_k: Keras's -1e10, every top-k entry).
std::vector<double> parse_thresholds(const PrecisionRecallOptions& o, const char* who) {
  return detail::parse_init_thresholds(o.thresholds, o.top_k ? detail::kNegInf : 0.5, who);
}

// tp / (tp + other), element 0 when there is a single threshold (Keras's result()[0]).
Tensor ratio(const Variable& tp, const Variable& other, size_t num_thresholds) {
  Tensor r = ops::div_no_nan(tp.value(), tp.value() + other.value());
  return num_thresholds == 1 ? ops::reshape(r, Shape{}) : r;
}

nlohmann::json config_of(const Metric& m, const PrecisionRecallOptions& o) {
  nlohmann::json c = m.Metric::get_config();
  c["thresholds"] = o.thresholds ? nlohmann::json(*o.thresholds) : nlohmann::json(nullptr);
  c["top_k"] = o.top_k ? nlohmann::json(*o.top_k) : nlohmann::json(nullptr);
  c["class_id"] = o.class_id ? nlohmann::json(*o.class_id) : nlohmann::json(nullptr);
  return c;
}

PrecisionRecallOptions options_from(const nlohmann::json& c, const char* cls, const char* default_name) {
  PrecisionRecallOptions o;
  o.name = detail::read_metric_base(c, cls, default_name, {"thresholds", "top_k", "class_id"});
  o.thresholds = detail::config_thresholds(c, cls);
  o.top_k = ::ember::detail::config_optional_int(c, "top_k", cls);
  o.class_id = ::ember::detail::config_optional_int(c, "class_id", cls);
  return o;
}

[[maybe_unused]] const bool precision_recall_registered = [] {
  detail::register_metric("Precision", [](const nlohmann::json& c) -> MetricPtr {
    return std::make_shared<Precision>(options_from(c, "Precision", "precision"));
  }, {"precision"});
  detail::register_metric("Recall", [](const nlohmann::json& c) -> MetricPtr {
    return std::make_shared<Recall>(options_from(c, "Recall", "recall"));
  }, {"recall"});
  return true;
}();

}  // namespace

Precision::Precision(PrecisionRecallOptions options)
    : Metric(options.name.empty() ? "precision" : options.name),
      options_(std::move(options)),
      thresholds_(parse_thresholds(options_, "Precision")),
      evenly_(detail::is_evenly_distributed_thresholds(thresholds_)) {
  const Shape shape{static_cast<int64_t>(thresholds_.size())};
  true_positives_ = add_variable("true_positives", shape);
  false_positives_ = add_variable("false_positives", shape);
}

void Precision::update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  detail::update_confusion_matrix_variables({.true_positives = &true_positives_, .false_positives = &false_positives_},
                                            y_true, y_pred, thresholds_, evenly_, sample_weight, options_.top_k,
                                            options_.class_id, "Precision '" + name() + "'");
}

Tensor Precision::result() const { return ratio(true_positives_, false_positives_, thresholds_.size()); }

nlohmann::json Precision::get_config() const { return config_of(*this, options_); }

Recall::Recall(PrecisionRecallOptions options)
    : Metric(options.name.empty() ? "recall" : options.name),
      options_(std::move(options)),
      thresholds_(parse_thresholds(options_, "Recall")),
      evenly_(detail::is_evenly_distributed_thresholds(thresholds_)) {
  const Shape shape{static_cast<int64_t>(thresholds_.size())};
  true_positives_ = add_variable("true_positives", shape);
  false_negatives_ = add_variable("false_negatives", shape);
}

void Recall::update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  detail::update_confusion_matrix_variables({.true_positives = &true_positives_, .false_negatives = &false_negatives_},
                                            y_true, y_pred, thresholds_, evenly_, sample_weight, options_.top_k,
                                            options_.class_id, "Recall '" + name() + "'");
}

Tensor Recall::result() const { return ratio(true_positives_, false_negatives_, thresholds_.size()); }

nlohmann::json Recall::get_config() const { return config_of(*this, options_); }

}  // namespace ember::metrics
