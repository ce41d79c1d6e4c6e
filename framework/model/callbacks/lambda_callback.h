#pragma once
// LambdaCallback (Keras 3: keras/src/callbacks/lambda_callback.py): a callback made of functions, one
// per hook, for small custom actions: LambdaCallback({.on_epoch_end = [](int epoch, Logs& logs) {...}}).
#include <cstdint>
#include <functional>

#include "framework/model/callbacks/callback.h"

namespace ember::callbacks {

// Each function, when set, is called from the hook of the same name; unset ones do nothing.
struct LambdaCallbackOptions {
  std::function<void(int epoch, const Logs& logs)> on_epoch_begin;
  std::function<void(int epoch, Logs& logs)> on_epoch_end;  // may add entries, as Keras's dict
  std::function<void(const Logs& logs)> on_train_begin;
  std::function<void(const Logs& logs)> on_train_end;
  std::function<void(int64_t batch, const Logs& logs)> on_train_batch_begin;
  std::function<void(int64_t batch, const Logs& logs)> on_train_batch_end;
  // Keras's older names for the train batch hooks, used when on_train_batch_begin/end are unset.
  std::function<void(int64_t batch, const Logs& logs)> on_batch_begin;
  std::function<void(int64_t batch, const Logs& logs)> on_batch_end;
  // The other hooks Keras lets a LambdaCallback override through its keyword arguments.
  std::function<void(const Logs& logs)> on_test_begin;
  std::function<void(const Logs& logs)> on_test_end;
  std::function<void(int64_t batch, const Logs& logs)> on_test_batch_begin;
  std::function<void(int64_t batch, const Logs& logs)> on_test_batch_end;
  std::function<void(const Logs& logs)> on_predict_begin;
  std::function<void(const Logs& logs)> on_predict_end;
  std::function<void(int64_t batch, const Logs& logs)> on_predict_batch_begin;
  std::function<void(int64_t batch, const Logs& logs)> on_predict_batch_end;
};

class LambdaCallback : public Callback {
  EMBER_CALLBACK(LambdaCallback)
 public:
  explicit LambdaCallback(LambdaCallbackOptions options = {}) : fns_(std::move(options)) {}

  void on_train_begin(const Logs& logs) override;
  void on_train_end(const Logs& logs) override;
  void on_epoch_begin(int epoch, const Logs& logs) override;
  void on_epoch_end(int epoch, Logs& logs) override;
  void on_train_batch_begin(int64_t batch, const Logs& logs) override;
  void on_train_batch_end(int64_t batch, const Logs& logs) override;
  void on_test_begin(const Logs& logs) override;
  void on_test_end(const Logs& logs) override;
  void on_test_batch_begin(int64_t batch, const Logs& logs) override;
  void on_test_batch_end(int64_t batch, const Logs& logs) override;
  void on_predict_begin(const Logs& logs) override;
  void on_predict_end(const Logs& logs) override;
  void on_predict_batch_begin(int64_t batch, const Logs& logs) override;
  void on_predict_batch_end(int64_t batch, const Logs& logs) override;

 private:
  LambdaCallbackOptions fns_;
};

}  // namespace ember::callbacks
