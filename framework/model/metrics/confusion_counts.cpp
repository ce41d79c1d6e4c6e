// TruePositives, FalsePositives, TrueNegatives, FalseNegatives (keras/src/metrics/confusion_metrics.py).
#include "framework/model/metrics/confusion_counts.h"

#include "framework/model/metrics/confusion_matrix.h"
#include "framework/model/metrics/metrics.h"
#include "framework/ops/array.h"

namespace ember::metrics {

namespace {

template <class M>
MetricPtr make_confusion_count(const nlohmann::json& c, const char* cls, const char* default_name) {
  ConfusionCountOptions o;
  o.name = detail::read_metric_base(c, cls, default_name, {"thresholds"});
  o.thresholds = detail::config_thresholds(c, cls);
  return std::make_shared<M>(std::move(o));
}

[[maybe_unused]] const bool confusion_counts_registered = [] {
  detail::register_metric("TruePositives", [](const nlohmann::json& c) {
    return make_confusion_count<TruePositives>(c, "TruePositives", "true_positives");
  }, {"true_positives"});
  detail::register_metric("FalsePositives", [](const nlohmann::json& c) {
    return make_confusion_count<FalsePositives>(c, "FalsePositives", "false_positives");
  }, {"false_positives"});
  detail::register_metric("TrueNegatives", [](const nlohmann::json& c) {
    return make_confusion_count<TrueNegatives>(c, "TrueNegatives", "true_negatives");
  }, {"true_negatives"});
  detail::register_metric("FalseNegatives", [](const nlohmann::json& c) {
    return make_confusion_count<FalseNegatives>(c, "FalseNegatives", "false_negatives");
  }, {"false_negatives"});
  return true;
}();

}  // namespace

ConfusionCount::ConfusionCount(ConfusionCountOptions options, const char* default_name, const char* class_name,
                               Cell cell)
    : Metric(options.name.empty() ? default_name : options.name),
      options_(std::move(options)),
      thresholds_(detail::parse_init_thresholds(options_.thresholds, 0.5, class_name)),
      evenly_(detail::is_evenly_distributed_thresholds(thresholds_)),
      cell_(cell) {
  accumulator_ = add_variable("accumulator", Shape{static_cast<int64_t>(thresholds_.size())});
}

void ConfusionCount::update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  detail::ConfusionVariables vars;
  switch (cell_) {
    case Cell::TruePositives: vars.true_positives = &accumulator_; break;
    case Cell::FalsePositives: vars.false_positives = &accumulator_; break;
    case Cell::TrueNegatives: vars.true_negatives = &accumulator_; break;
    case Cell::FalseNegatives: vars.false_negatives = &accumulator_; break;
  }
  detail::update_confusion_matrix_variables(vars, y_true, y_pred, thresholds_, evenly_, sample_weight, std::nullopt,
                                            std::nullopt, class_name() + " '" + name() + "'");
}

Tensor ConfusionCount::result() const {
  return thresholds_.size() == 1 ? ops::reshape(accumulator_.value(), Shape{}) : accumulator_.value();
}

nlohmann::json ConfusionCount::get_config() const {
  nlohmann::json c = Metric::get_config();
  c["thresholds"] = options_.thresholds ? nlohmann::json(*options_.thresholds) : nlohmann::json(nullptr);
  return c;
}

TruePositives::TruePositives(ConfusionCountOptions options)
    : ConfusionCount(std::move(options), "true_positives", "TruePositives", Cell::TruePositives) {}
FalsePositives::FalsePositives(ConfusionCountOptions options)
    : ConfusionCount(std::move(options), "false_positives", "FalsePositives", Cell::FalsePositives) {}
TrueNegatives::TrueNegatives(ConfusionCountOptions options)
    : ConfusionCount(std::move(options), "true_negatives", "TrueNegatives", Cell::TrueNegatives) {}
FalseNegatives::FalseNegatives(ConfusionCountOptions options)
    : ConfusionCount(std::move(options), "false_negatives", "FalseNegatives", Cell::FalseNegatives) {}

}  // namespace ember::metrics
