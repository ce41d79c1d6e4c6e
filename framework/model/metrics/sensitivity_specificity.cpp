// SensitivityAtSpecificity, SpecificityAtSensitivity, PrecisionAtRecall, RecallAtPrecision
// (keras/src/metrics/confusion_metrics.py SensitivitySpecificityBase and subclasses).
#include "framework/model/metrics/sensitivity_specificity.h"

#include "framework/core/config_reader.h"
#include "framework/core/error.h"
#include "framework/model/metrics/confusion_matrix.h"
#include "framework/model/metrics/metrics.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "framework/ops/tensor_helpers.h"

namespace ember::metrics {

namespace {

// The target rate under value_key, which Keras requires (its constructors have no default for it).
template <class M>
MetricPtr make_sweep(const nlohmann::json& c, const char* cls, const char* default_name, const char* value_key) {
  ThresholdSweepOptions o;
  o.name = detail::read_metric_base(c, cls, default_name, {"num_thresholds", "class_id", value_key});
  o.num_thresholds = ::ember::detail::config_int(c, "num_thresholds", 200, cls);
  o.class_id = ::ember::detail::config_optional_int(c, "class_id", cls);
  auto it = c.find(value_key);
  EMBER_CHECK(it != c.end() && !it->is_null(), InvalidArgument)
      << cls << ": missing the required argument " << value_key << " (a number in [0, 1])";
  return std::make_shared<M>(::ember::detail::config_double(c, value_key, 0.0, cls), o);
}

[[maybe_unused]] const bool sensitivity_specificity_registered = [] {
  detail::register_metric("SensitivityAtSpecificity", [](const nlohmann::json& c) {
    return make_sweep<SensitivityAtSpecificity>(c, "SensitivityAtSpecificity", "sensitivity_at_specificity",
                                                "specificity");
  }, {"sensitivity_at_specificity"});
  detail::register_metric("SpecificityAtSensitivity", [](const nlohmann::json& c) {
    return make_sweep<SpecificityAtSensitivity>(c, "SpecificityAtSensitivity", "specificity_at_sensitivity",
                                                "sensitivity");
  }, {"specificity_at_sensitivity"});
  detail::register_metric("PrecisionAtRecall", [](const nlohmann::json& c) {
    return make_sweep<PrecisionAtRecall>(c, "PrecisionAtRecall", "precision_at_recall", "recall");
  }, {"precision_at_recall"});
  detail::register_metric("RecallAtPrecision", [](const nlohmann::json& c) {
    return make_sweep<RecallAtPrecision>(c, "RecallAtPrecision", "recall_at_precision", "precision");
  }, {"recall_at_precision"});
  return true;
}();

// Keras's thresholds: 0.5 alone for one, else i / (n - 1) with exact end points 0 and 1 (no epsilon, unlike AUC).
std::vector<double> sweep_thresholds(int64_t n) {
  if (n == 1) return {0.5};
  std::vector<double> t{0.0};
  for (int64_t i = 0; i < n - 2; ++i) t.push_back(static_cast<double>(i + 1) * 1.0 / static_cast<double>(n - 1));
  t.push_back(1.0);
  return t;
}

}  // namespace

SensitivitySpecificityBase::SensitivitySpecificityBase(double value, ThresholdSweepOptions options,
                                                       const char* default_name, const char* class_name,
                                                       const char* value_key)
    : Metric(options.name.empty() ? default_name : options.name),
      value_(value),
      value_key_(value_key),
      options_(std::move(options)) {
  EMBER_CHECK(value >= 0 && value <= 1, InvalidArgument)
      << class_name << ": argument " << value_key << " must be in the range [0, 1], got " << value_key << "="
      << value;
  EMBER_CHECK(options_.num_thresholds > 0, InvalidArgument)
      << class_name << ": argument num_thresholds must be an integer > 0, got num_thresholds="
      << options_.num_thresholds;
  thresholds_ = sweep_thresholds(options_.num_thresholds);
  const Shape shape{static_cast<int64_t>(thresholds_.size())};
  true_positives_ = add_variable("true_positives", shape);
  false_positives_ = add_variable("false_positives", shape);
  true_negatives_ = add_variable("true_negatives", shape);
  false_negatives_ = add_variable("false_negatives", shape);
}

void SensitivitySpecificityBase::update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  // Keras takes the bucket path for any num_thresholds > 1 (even 2, which is_evenly_distributed_thresholds
  // would not call even): the end points 0 and 1 carry no epsilon, so a prediction of exactly 0 is in no bucket.
  detail::update_confusion_matrix_variables(
      {.true_positives = &true_positives_, .false_positives = &false_positives_, .true_negatives = &true_negatives_,
       .false_negatives = &false_negatives_},
      y_true, y_pred, thresholds_, /*thresholds_distributed_evenly=*/thresholds_.size() > 1, sample_weight,
      std::nullopt, options_.class_id, class_name() + " '" + name() + "'");
}

Tensor SensitivitySpecificityBase::max_under_constraint(const Tensor& constrained, const Tensor& dependent) const {
  const Tensor feasible = ops::greater_equal(constrained, ops::f32(value_));
  return ops::maximum(ops::reduce_max(ops::where(feasible, dependent, ops::f32(0))), ops::f32(0));
}

Tensor SensitivitySpecificityBase::sensitivities() const {
  return ops::div_no_nan(true_positives_.value(), true_positives_.value() + false_negatives_.value());
}
Tensor SensitivitySpecificityBase::specificities() const {
  return ops::div_no_nan(true_negatives_.value(), true_negatives_.value() + false_positives_.value());
}
Tensor SensitivitySpecificityBase::precisions() const {
  return ops::div_no_nan(true_positives_.value(), true_positives_.value() + false_positives_.value());
}

nlohmann::json SensitivitySpecificityBase::get_config() const {
  nlohmann::json c = Metric::get_config();
  c["class_id"] = options_.class_id ? nlohmann::json(*options_.class_id) : nlohmann::json(nullptr);
  c["num_thresholds"] = options_.num_thresholds;
  c[value_key_] = value_;
  return c;
}

SensitivityAtSpecificity::SensitivityAtSpecificity(double specificity, ThresholdSweepOptions options)
    : SensitivitySpecificityBase(specificity, std::move(options), "sensitivity_at_specificity",
                                 "SensitivityAtSpecificity", "specificity") {}
Tensor SensitivityAtSpecificity::result() const { return max_under_constraint(specificities(), sensitivities()); }

SpecificityAtSensitivity::SpecificityAtSensitivity(double sensitivity, ThresholdSweepOptions options)
    : SensitivitySpecificityBase(sensitivity, std::move(options), "specificity_at_sensitivity",
                                 "SpecificityAtSensitivity", "sensitivity") {}
Tensor SpecificityAtSensitivity::result() const { return max_under_constraint(sensitivities(), specificities()); }

PrecisionAtRecall::PrecisionAtRecall(double recall, ThresholdSweepOptions options)
    : SensitivitySpecificityBase(recall, std::move(options), "precision_at_recall", "PrecisionAtRecall", "recall") {}
Tensor PrecisionAtRecall::result() const { return max_under_constraint(sensitivities(), precisions()); }

RecallAtPrecision::RecallAtPrecision(double precision, ThresholdSweepOptions options)
    : SensitivitySpecificityBase(precision, std::move(options), "recall_at_precision", "RecallAtPrecision",
                                 "precision") {}
Tensor RecallAtPrecision::result() const { return max_under_constraint(precisions(), sensitivities()); }

}  // namespace ember::metrics
