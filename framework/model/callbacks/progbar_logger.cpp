#include "framework/model/callbacks/progbar_logger.h"

#include <iostream>
#include <string>
#include <vector>

namespace ember::callbacks {

namespace {
// The logs hold metric results already averaged by the metrics themselves, so every value is shown
// as given (tf-keras passes the model's metric names as stateful_metrics for the same reason).
std::vector<std::string> keys_of(const Logs& logs) {
  std::vector<std::string> keys;
  for (const auto& item : logs) keys.push_back(item.first);
  return keys;
}
}  // namespace

ProgbarLogger::ProgbarLogger(ProgbarLoggerOptions options) : options_(std::move(options)) {}

void ProgbarLogger::set_params(const CallbackParams& params) {
  Callback::set_params(params);
  // Validation run inside fit must not retarget the epoch's bar, whatever params it is given.
  if (called_in_fit_) return;
  verbose_ = params.verbose;
  epochs_ = params.epochs;
  target_ = params.steps > 0 ? params.steps : -1;
}

void ProgbarLogger::on_train_begin(const Logs&) {
  // Inside fit, validation is silent.
  called_in_fit_ = true;
}

// Keras never clears the flag; clearing it lets one logger also show a later evaluate's bar.
void ProgbarLogger::on_train_end(const Logs&) { called_in_fit_ = false; }

void ProgbarLogger::reset_progbar() {
  seen_ = 0;
  ProgbarOptions options;
  options.verbose = verbose_;
  options.stream = options_.stream;
  options.dynamic_display = options_.dynamic_display;
  options.clock = options_.clock;
  progbar_ = std::make_shared<Progbar>(target_, std::move(options));
}

void ProgbarLogger::on_epoch_begin(int epoch, const Logs&) {
  reset_progbar();
  if (verbose_ && epochs_ > 1) {
    std::ostream& os = options_.stream ? *options_.stream : std::cout;
    os << "Epoch " << epoch + 1 << "/" << epochs_ << "\n";
    os.flush();
  }
}

void ProgbarLogger::on_epoch_end(int, Logs& logs) { finalize_progbar(logs); }

void ProgbarLogger::on_train_batch_end(int64_t batch, const Logs& logs) { update_progbar(batch, logs); }

void ProgbarLogger::on_test_begin(const Logs&) {
  if (!called_in_fit_) reset_progbar();
}

void ProgbarLogger::on_test_batch_end(int64_t batch, const Logs& logs) {
  if (!called_in_fit_) update_progbar(batch, logs);
}

void ProgbarLogger::on_test_end(const Logs& logs) {
  if (!called_in_fit_) finalize_progbar(logs);
}

void ProgbarLogger::on_predict_begin(const Logs&) { reset_progbar(); }

// Prediction batches carry outputs, not metrics: the bar shows none.
void ProgbarLogger::on_predict_batch_end(int64_t batch, const Logs&) { update_progbar(batch, {}); }

void ProgbarLogger::on_predict_end(const Logs& logs) { finalize_progbar(logs); }

void ProgbarLogger::update_progbar(int64_t batch, const Logs& logs) {
  if (!progbar_) reset_progbar();
  seen_ = batch + 1;  // one-indexed
  // verbose 2 draws only the final line (tf-keras does not even call the batch hooks then).
  if (verbose_ != 1) return;
  progbar_->update_stateful_metrics(keys_of(logs));
  progbar_->update(seen_, logs, false);
}

void ProgbarLogger::finalize_progbar(const Logs& logs) {
  if (!progbar_) reset_progbar();
  // An epoch of unknown length: its step count is the target from now on.
  if (target_ < 0 && seen_ > 0) {
    target_ = seen_;
    progbar_->set_target(target_);
  }
  progbar_->update_stateful_metrics(keys_of(logs));
  progbar_->update(target_ > 0 ? target_ : seen_, logs, true);
}

}  // namespace ember::callbacks
