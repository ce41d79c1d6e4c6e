// Hinge, SquaredHinge and CategoricalHinge (keras/src/metrics/hinge_metrics.py), over the losses of the
// same names.
#include "framework/model/metrics/hinge_metrics.h"

#include "framework/model/metrics/metrics.h"
#include "losses/categorical_hinge.h"
#include "losses/hinge.h"
#include "losses/squared_hinge.h"

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
    : LossMeanMetric(options.name.empty() ? "hinge" : options.name, std::make_shared<losses::Hinge>()) {}

SquaredHinge::SquaredHinge(MetricOptions options)
    : LossMeanMetric(options.name.empty() ? "squared_hinge" : options.name, std::make_shared<losses::SquaredHinge>()) {}

CategoricalHinge::CategoricalHinge(MetricOptions options)
    : LossMeanMetric(options.name.empty() ? "categorical_hinge" : options.name,
                     std::make_shared<losses::CategoricalHinge>()) {}

}  // namespace ember::metrics
