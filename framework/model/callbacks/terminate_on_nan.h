#pragma once
// TerminateOnNaN (Keras 3: keras/src/callbacks/terminate_on_nan.py): at the first training batch whose
// loss is NaN or infinite, stops fit after that batch, printing "Batch N: Invalid loss, terminating
// training", or with raise_error throws at once, so no later hook (on_train_end included) runs.
#include "framework/model/callbacks/callback.h"

namespace ember::callbacks {

struct TerminateOnNaNOptions {
  // Throw FailedPrecondition ("NaN or Inf loss encountered at batch N. Loss value: nan. ...") instead
  // of stopping gracefully: Keras's raise_error (a RuntimeError there).
  bool raise_error = false;
};

class TerminateOnNaN : public Callback {
  EMBER_CALLBACK(TerminateOnNaN)
 public:
  explicit TerminateOnNaN(TerminateOnNaNOptions options = {}) : options_(options) {}
  void on_train_batch_end(int64_t batch, const Logs& logs) override;

 private:
  TerminateOnNaNOptions options_;
};

}  // namespace ember::callbacks
