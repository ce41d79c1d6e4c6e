// Hinge (keras/src/metrics/hinge_metrics.py), over losses::Hinge.
#include "framework/model/metrics/hinge_metrics.h"

#include "framework/model/metrics/metrics.h"
#include "losses/hinge.h"

namespace ember::metrics {

namespace {

[[maybe_unused]] const bool hinge_metrics_registered = [] {
  detail::register_metric("Hinge", [](const nlohmann::json& c) -> MetricPtr {
    return std::make_shared<Hinge>(MetricOptions{.name = detail::read_metric_base(c, "Hinge", "hinge")});
  }, {"hinge"});
  return true;
}();

}  // namespace

Hinge::Hinge(MetricOptions options)
    : LossMeanMetric(options.name.empty() ? "hinge" : options.name, std::make_shared<losses::Hinge>()) {}

}  // namespace ember::metrics
