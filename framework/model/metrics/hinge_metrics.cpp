// Hinge, SquaredHinge and CategoricalHinge (keras/src/metrics/hinge_metrics.py), over the losses of the
// same names.
#include "framework/model/metrics/hinge_metrics.h"

#include "framework/model/metrics/metrics.h"

namespace ember::metrics {

namespace {

[[maybe_unused]] const bool hinge_metrics_registered = [] {
  detail::register_metric("Hinge", [](const nlohmann::json& c) -> MetricPtr {
    return std::make_shared<Hinge>(MetricOptions{.name = detail::read_metric_base(c, "Hinge", "hinge")});
  }, {"hinge"});
  detail::register_metric("SquaredHinge", [](const nlohmann::json& c) -> MetricPtr {
    return std::make_shared<SquaredHinge>(
        MetricOptions{.name = detail::read_metric_base(c, "SquaredHinge", "squared_hinge")});
  }, {"squared_hinge"});
  detail::register_metric("CategoricalHinge", [](const nlohmann::json& c) -> MetricPtr {
    return std::make_shared<CategoricalHinge>(
        MetricOptions{.name = detail::read_metric_base(c, "CategoricalHinge", "categorical_hinge")});
  }, {"categorical_hinge"});
  return true;
}();

}  // namespace

Hinge::Hinge(MetricOptions options)
    : LossMeanMetric(options.name.empty() ? "hinge" : options.name, ::ember::detail::make_loss_values("Hinge")) {}

SquaredHinge::SquaredHinge(MetricOptions options)
    : LossMeanMetric(options.name.empty() ? "squared_hinge" : options.name, ::ember::detail::make_loss_values("SquaredHinge")) {}

CategoricalHinge::CategoricalHinge(MetricOptions options)
    : LossMeanMetric(options.name.empty() ? "categorical_hinge" : options.name,
                     ::ember::detail::make_loss_values("CategoricalHinge")) {}

}  // namespace ember::metrics
