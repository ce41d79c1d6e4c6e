#include "framework/model/callbacks/monitor_callback.h"

#include <cmath>

#include "framework/core/error.h"
#include "framework/core/logging.h"
#include "framework/model/metrics/metric.h"
#include "framework/model/model.h"

namespace ember::callbacks {

MonitorCallback::MonitorCallback(std::string who, std::string monitor, std::string mode,
                                 std::optional<double> baseline, double min_delta)
    : best_(baseline), who_(std::move(who)), monitor_(std::move(monitor)), mode_(std::move(mode)),
      min_delta_(std::abs(min_delta)) {
  EMBER_CHECK(mode_ == "auto" || mode_ == "min" || mode_ == "max", InvalidArgument)
      << who_ << ": mode must be \"auto\", \"min\" or \"max\"; got \"" << mode_ << "\"";
}

void MonitorCallback::set_monitor_op() {
  if (minimize_) return;
  if (mode_ != "auto") {
    minimize_ = mode_ == "min";
  } else {
    std::string name = monitor_;
    if (name.rfind("val_", 0) == 0) name = name.substr(4);
    std::optional<bool> minimize;
    if (name == "loss") minimize = true;
    if (model()) {
      for (const auto& m : model()->metrics()) {
        if (m->name() != name || m->direction().empty()) continue;
        minimize = m->direction() != "up";
      }
    }
    EMBER_CHECK(minimize.has_value(), InvalidArgument)
        << who_ << " callback received monitor=" << monitor_
        << ", but Ember isn't able to automatically determine whether that metric should be maximized or "
           "minimized. Pass `.mode = \"max\"` in order to monitor based on the highest metric value, or pass "
           "`.mode = \"min\"` in order to use the lowest value.";
    minimize_ = minimize;
  }
  if (*minimize_) min_delta_ = -min_delta_;
}

bool MonitorCallback::is_improvement(double value, std::optional<double> reference) const {
  if (!reference) return true;
  EMBER_CHECK(minimize_.has_value(), Internal) << who_ << ": is_improvement before set_monitor_op";
  return *minimize_ ? value - min_delta_ < *reference : value - min_delta_ > *reference;
}

std::optional<double> MonitorCallback::monitored_value(const Logs& logs, const std::string& what,
                                                       const char* end) const {
  std::optional<double> current = logs.get(monitor_);
  if (!current) {
    std::string keys;
    for (const auto& item : logs) keys += (keys.empty() ? "" : ",") + item.first;
    logging::warn(std::string(what) + " `" + monitor_ + "` which is not available. Available metrics are: " + keys + end);
  }
  return current;
}

}  // namespace ember::callbacks
