#pragma once
// TerminateOnNaN (Keras 3: keras/src/callbacks/terminate_on_nan.py): stops fit at the first training
// batch whose loss is NaN or infinite, printing "Batch N: Invalid loss, terminating training".
#include "framework/model/callbacks/callback.h"

namespace ember::callbacks {

class TerminateOnNaN : public Callback {
  EMBER_CALLBACK(TerminateOnNaN)
 public:
  TerminateOnNaN() = default;
  void on_train_batch_end(int64_t batch, const Logs& logs) override;
};

}  // namespace ember::callbacks
