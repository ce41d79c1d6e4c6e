#pragma once
// ProgbarLogger (tf-keras: keras.callbacks.ProgbarLogger): prints "Epoch 1/5" and a Progbar per epoch
// of fit (validation inside fit stays silent; its val_ results join the epoch's final line), and a bar
// for evaluate/predict called on their own. fit adds one when verbose > 0.
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>

#include "framework/model/callbacks/callback.h"
#include "framework/model/callbacks/progbar.h"

namespace ember::callbacks {

struct ProgbarLoggerOptions {
  std::ostream* stream = nullptr;       // null: std::cout
  std::optional<bool> dynamic_display{};  // unset: whether the stream is a terminal (see ProgbarOptions)
  std::function<double()> clock;        // seconds; empty: a steady clock
};

class ProgbarLogger : public Callback {
  EMBER_CALLBACK(ProgbarLogger)
 public:
  explicit ProgbarLogger(ProgbarLoggerOptions options = {});

  void set_params(const CallbackParams& params) override;
  void on_train_begin(const Logs& logs) override;
  void on_train_end(const Logs& logs) override;
  void on_epoch_begin(int epoch, const Logs& logs) override;
  void on_epoch_end(int epoch, Logs& logs) override;
  void on_train_batch_end(int64_t batch, const Logs& logs) override;
  void on_test_begin(const Logs& logs) override;
  void on_test_batch_end(int64_t batch, const Logs& logs) override;
  void on_test_end(const Logs& logs) override;
  void on_predict_begin(const Logs& logs) override;
  void on_predict_batch_end(int64_t batch, const Logs& logs) override;
  void on_predict_end(const Logs& logs) override;

 private:
  void reset_progbar();
  void update_progbar(int64_t batch, const Logs& logs);
  void finalize_progbar(const Logs& logs);

  ProgbarLoggerOptions options_;
  // A shared_ptr keeps the callback movable (EMBER_CALLBACK moves it into shared ownership).
  std::shared_ptr<Progbar> progbar_;
  int64_t seen_ = 0;
  int64_t target_ = -1;  // steps per bar; -1 until known
  int verbose_ = 1;
  int epochs_ = 1;
  bool called_in_fit_ = false;
};

}  // namespace ember::callbacks
