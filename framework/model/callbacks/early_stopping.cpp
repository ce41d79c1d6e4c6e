#include "framework/model/callbacks/early_stopping.h"

#include <cmath>
#include <iostream>

#include "framework/core/error.h"
#include "framework/model/metrics/metric.h"
#include "framework/model/model.h"

namespace ember::callbacks {

namespace {
// Keras's monitor mode check (Keras only warns and falls back to "auto"; a typo here is an error).
void check_mode(const std::string& who, const std::string& mode) {
  EMBER_CHECK(mode == "auto" || mode == "min" || mode == "max", InvalidArgument)
      << who << ": mode must be \"auto\", \"min\" or \"max\"; got \"" << mode << "\"";
}
}  // namespace

EarlyStopping::EarlyStopping(EarlyStoppingOptions options)
    : options_(std::move(options)), min_delta_(std::abs(options_.min_delta)) {
  check_mode("EarlyStopping", options_.mode);
  EMBER_CHECK(options_.patience >= 0, InvalidArgument)
      << "EarlyStopping: patience must be >= 0; got " << options_.patience;
  EMBER_CHECK(options_.start_from_epoch >= 0, InvalidArgument)
      << "EarlyStopping: start_from_epoch must be >= 0; got " << options_.start_from_epoch;
}

void EarlyStopping::set_monitor_op() {
  if (options_.mode == "min") {
    minimize_ = true;
  } else if (options_.mode == "max") {
    minimize_ = false;
  } else {
    std::string name = options_.monitor;
    if (name.rfind("val_", 0) == 0) name = name.substr(4);
    if (name == "loss") minimize_ = true;
    if (model()) {
      for (const auto& m : model()->metrics()) {
        if (m->name() != name || m->direction().empty()) continue;
        minimize_ = m->direction() != "up";
      }
    }
    EMBER_CHECK(minimize_.has_value(), InvalidArgument)
        << "EarlyStopping callback received monitor=" << options_.monitor
        << ", but Ember isn't able to automatically determine whether that metric should be maximized or "
           "minimized. Pass `.mode = \"max\"` in order to monitor based on the highest metric value, or pass "
           "`.mode = \"min\"` in order to use the lowest value.";
  }
  min_delta_ = std::abs(options_.min_delta) * (*minimize_ ? -1 : 1);
}

bool EarlyStopping::is_improvement(double value, std::optional<double> reference) const {
  if (!reference) return true;
  return *minimize_ ? value - min_delta_ < *reference : value - min_delta_ > *reference;
}

void EarlyStopping::on_train_begin(const Logs&) {
  // The same instance may serve several fits.
  wait_ = 0;
  stopped_epoch_ = 0;
  best_.reset();
  best_weights_.clear();
  has_best_weights_ = false;
  best_epoch_ = 0;
}

void EarlyStopping::on_epoch_end(int epoch, Logs& logs) {
  if (!minimize_) set_monitor_op();
  const std::optional<double> current = logs.get(options_.monitor);
  if (!current) {
    std::string keys;
    for (const auto& item : logs) keys += (keys.empty() ? "" : ",") + item.first;
    std::cerr << "UserWarning: Early stopping conditioned on metric `" << options_.monitor
              << "` which is not available. Available metrics are: " << keys << "\n";
    return;
  }
  if (epoch < options_.start_from_epoch) return;  // warm-up

  if (options_.restore_best_weights) {
    EMBER_CHECK(model(), FailedPrecondition)
        << "EarlyStopping: restore_best_weights needs the model, but the callback has none (set_model)";
    // Until something improves, the weights at the first monitored epoch are the best.
    if (!has_best_weights_) {
      best_weights_ = model()->get_weights();
      has_best_weights_ = true;
      best_epoch_ = epoch;
    }
  }

  ++wait_;
  if (is_improvement(*current, best_)) {
    best_ = *current;
    best_epoch_ = epoch;
    if (options_.restore_best_weights) best_weights_ = model()->get_weights();
    // Only restart the wait when the value beats both the previous best and the baseline.
    if (!options_.baseline || is_improvement(*current, options_.baseline)) wait_ = 0;
    return;
  }
  if (wait_ >= options_.patience && epoch > 0) {
    stopped_epoch_ = epoch;
    EMBER_CHECK(model(), FailedPrecondition)
        << "EarlyStopping: cannot stop training without a model (set_model was not called)";
    model()->stop_training = true;
  }
}

void EarlyStopping::on_train_end(const Logs&) {
  if (stopped_epoch_ > 0 && options_.verbose > 0) std::cout << "Epoch " << stopped_epoch_ + 1 << ": early stopping\n";
  if (options_.restore_best_weights && has_best_weights_) {
    if (options_.verbose > 0)
      std::cout << "Restoring model weights from the end of the best epoch: " << best_epoch_ + 1 << ".\n";
    model()->set_weights(best_weights_);
  }
  std::cout.flush();
}

}  // namespace ember::callbacks
