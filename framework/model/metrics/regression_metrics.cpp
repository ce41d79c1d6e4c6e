// MeanSquaredError, MeanAbsoluteError, RootMeanSquaredError (keras/src/metrics/regression_metrics.py).
#include "framework/model/metrics/regression_metrics.h"

#include "framework/core/error.h"
#include "framework/model/metrics/metrics.h"
#include "framework/model/metrics/metrics_utils.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"

namespace ember::metrics {

namespace {

// y_true and y_pred as float32 of the same shape after Keras's squeeze/expand rule (Keras would
// broadcast other shapes; here they are an InvalidArgument naming the metric).
std::pair<Tensor, Tensor> prepare(const char* who, const Tensor& y_true, const Tensor& y_pred) {
  EMBER_CHECK(y_true.defined() && y_pred.defined(), InvalidArgument) << who << ": y_true and y_pred must be defined";
  auto [t, p] = squeeze_or_expand_to_same_rank(to_float32(y_true), to_float32(y_pred));
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

}  // namespace ember::metrics
