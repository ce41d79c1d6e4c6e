#include "framework/model/callbacks/early_stopping.h"

#include <iostream>

#include "framework/core/error.h"
#include "framework/model/model.h"

namespace ember::callbacks {

EarlyStopping::EarlyStopping(EarlyStoppingOptions options)
    : MonitorCallback("EarlyStopping", options.monitor, options.mode, std::nullopt, options.min_delta),
      options_(std::move(options)) {
  EMBER_CHECK(options_.patience >= 0, InvalidArgument)
      << "EarlyStopping: patience must be >= 0; got " << options_.patience;
  EMBER_CHECK(options_.start_from_epoch >= 0, InvalidArgument)
      << "EarlyStopping: start_from_epoch must be >= 0; got " << options_.start_from_epoch;
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
  set_monitor_op();
  const std::optional<double> current = monitored_value(logs, "Early stopping conditioned on metric");
  if (!current) return;
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
