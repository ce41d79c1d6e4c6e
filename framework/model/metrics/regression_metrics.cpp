// MeanSquaredError, MeanAbsoluteError, RootMeanSquaredError, MeanAbsolutePercentageError,
// MeanSquaredLogarithmicError, CosineSimilarity and LogCoshError (keras/src/metrics/regression_metrics.py).
#include "framework/model/metrics/regression_metrics.h"

#include "framework/core/config_reader.h"
#include "framework/core/error.h"
#include "framework/model/metrics/metrics.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "framework/ops/tensor_helpers.h"

namespace ember::metrics {

namespace {

// y_true and y_pred as float32 of the same shape after Keras's squeeze/expand rule (Keras would
// broadcast other shapes; here they are an InvalidArgument naming the metric).
std::pair<Tensor, Tensor> prepare(const char* who, const Tensor& y_true, const Tensor& y_pred) {
  EMBER_CHECK(y_true.defined() && y_pred.defined(), InvalidArgument) << who << ": y_true and y_pred must be defined";
  auto [t, p] = ops::squeeze_or_expand_to_same_rank(ops::to_float32(y_true), ops::to_float32(y_pred));
  EMBER_CHECK(t.shape() == p.shape(), InvalidArgument)
      << who << ": y_true has shape " << y_true.shape() << " but y_pred has shape " << y_pred.shape()
      << "; they must be equal (up to a trailing 1)";
  return {t, p};
}

template <class M>
MetricPtr make(const nlohmann::json& c, const char* cls, const char* default_name) {
  return std::make_shared<M>(MetricOptions{.name = detail::read_metric_base(c, cls, default_name)});
}

[[maybe_unused]] const bool regression_metrics_registered = [] {
  detail::register_metric("MeanSquaredError", [](const nlohmann::json& c) {
    return make<MeanSquaredError>(c, "MeanSquaredError", "mean_squared_error");
  }, {"mean_squared_error", "mse", "MSE"});
  detail::register_metric("MeanAbsoluteError", [](const nlohmann::json& c) {
    return make<MeanAbsoluteError>(c, "MeanAbsoluteError", "mean_absolute_error");
  }, {"mean_absolute_error", "mae", "MAE"});
  detail::register_metric("RootMeanSquaredError", [](const nlohmann::json& c) {
    return make<RootMeanSquaredError>(c, "RootMeanSquaredError", "root_mean_squared_error");
  }, {"root_mean_squared_error"});
  detail::register_metric("MeanAbsolutePercentageError", [](const nlohmann::json& c) {
    return make<MeanAbsolutePercentageError>(c, "MeanAbsolutePercentageError", "mean_absolute_percentage_error");
  }, {"mean_absolute_percentage_error", "mape", "MAPE"});
  detail::register_metric("MeanSquaredLogarithmicError", [](const nlohmann::json& c) {
    return make<MeanSquaredLogarithmicError>(c, "MeanSquaredLogarithmicError", "mean_squared_logarithmic_error");
  }, {"mean_squared_logarithmic_error", "msle", "MSLE"});
  detail::register_metric("CosineSimilarity", [](const nlohmann::json& c) -> MetricPtr {
    const char* who = "CosineSimilarity";
    const std::string name = detail::read_metric_base(c, who, "cosine_similarity", {"axis"});
    return std::make_shared<CosineSimilarity>(
        CosineSimilarityOptions{.axis = ::ember::detail::config_int(c, "axis", -1, who), .name = name});
  }, {"cosine_similarity"});
  // Keras registers no "logcosh" or "log_cosh" metric (those are loss names), only the class's snake_case.
  detail::register_metric("LogCoshError", [](const nlohmann::json& c) {
    return make<LogCoshError>(c, "LogCoshError", "logcosh");
  }, {"log_cosh_error"});
  return true;
}();

}  // namespace

MeanSquaredError::MeanSquaredError(MetricOptions options)
    : MeanMetricWrapper(options.name.empty() ? "mean_squared_error" : options.name) {}
Tensor MeanSquaredError::values(const Tensor& y_true, const Tensor& y_pred) const {
  auto [t, p] = prepare("MeanSquaredError", y_true, y_pred);
  return ops::reduce_mean(ops::square(t - p), -1);
}

MeanAbsoluteError::MeanAbsoluteError(MetricOptions options)
    : MeanMetricWrapper(options.name.empty() ? "mean_absolute_error" : options.name) {}
Tensor MeanAbsoluteError::values(const Tensor& y_true, const Tensor& y_pred) const {
  auto [t, p] = prepare("MeanAbsoluteError", y_true, y_pred);
  return ops::reduce_mean(ops::abs(t - p), -1);
}

RootMeanSquaredError::RootMeanSquaredError(MetricOptions options)
    : Metric(options.name.empty() ? "root_mean_squared_error" : options.name) {
  total_ = add_variable("total");
  count_ = add_variable("count");
}

void RootMeanSquaredError::update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  auto [t, p] = prepare("RootMeanSquaredError", y_true, y_pred);
  detail::accumulate_mean(total_, count_, ops::square(p - t), sample_weight, "RootMeanSquaredError '" + name() + "'");
}

Tensor RootMeanSquaredError::result() const { return ops::sqrt(ops::div_no_nan(total_.value(), count_.value())); }

MeanAbsolutePercentageError::MeanAbsolutePercentageError(MetricOptions options)
    : LossMeanMetric(options.name.empty() ? "mean_absolute_percentage_error" : options.name,
                     ::ember::detail::make_loss_values("MeanAbsolutePercentageError")) {}

MeanSquaredLogarithmicError::MeanSquaredLogarithmicError(MetricOptions options)
    : LossMeanMetric(options.name.empty() ? "mean_squared_logarithmic_error" : options.name,
                     ::ember::detail::make_loss_values("MeanSquaredLogarithmicError")) {}

CosineSimilarity::CosineSimilarity(CosineSimilarityOptions options)
    : LossMeanMetric(options.name.empty() ? "cosine_similarity" : options.name,
                     ::ember::detail::make_loss_values("CosineSimilarity", {{"axis", options.axis}})),
      axis_(options.axis) {}

// Keras's metric is the loss's formula without its minus sign (negation is exact in floating point).
Tensor CosineSimilarity::masked_values(const Tensor& y_true, const Tensor& y_pred, Tensor& mask) const {
  return -LossMeanMetric::masked_values(y_true, y_pred, mask);
}

nlohmann::json CosineSimilarity::get_config() const {
  nlohmann::json c = Metric::get_config();
  c["axis"] = axis_;
  return c;
}

LogCoshError::LogCoshError(MetricOptions options)
    : LossMeanMetric(options.name.empty() ? "logcosh" : options.name, ::ember::detail::make_loss_values("LogCosh")) {}

}  // namespace ember::metrics
