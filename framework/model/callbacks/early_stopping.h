#pragma once
// EarlyStopping (Keras 3: keras/src/callbacks/early_stopping.py): stops fit once the monitored quantity
// has not improved for `patience` epochs, optionally restoring the best epoch's weights at the end.
#include <optional>
#include <string>
#include <vector>

#include "framework/core/tensor.h"
#include "framework/model/callbacks/monitor_callback.h"

namespace ember::callbacks {

struct EarlyStoppingOptions {
  std::string monitor = "val_loss";
  double min_delta = 0;  // a change smaller than this (in absolute value) is no improvement
  int patience = 0;      // epochs without improvement before stopping
  int verbose = 0;       // 1: print "Epoch N: early stopping" and the restore message
  // "min", "max", or "auto": "loss"/"val_loss" are minimised, a compiled metric follows its
  // direction() (e.g. "accuracy" maximised); any other name in auto mode is an InvalidArgument.
  std::string mode = "auto";
  // Training stops unless the quantity beats this within `patience` epochs.
  std::optional<double> baseline{};
  bool restore_best_weights = false;
  int start_from_epoch = 0;  // epochs of warm-up that are not monitored
};

class EarlyStopping : public MonitorCallback {
  EMBER_CALLBACK(EarlyStopping)
 public:
  explicit EarlyStopping(EarlyStoppingOptions options = {});

  void on_train_begin(const Logs& logs) override;
  void on_epoch_end(int epoch, Logs& logs) override;
  void on_train_end(const Logs& logs) override;
  bool implements_train_batch_hooks() const override { return false; }
  bool implements_test_batch_hooks() const override { return false; }

  // The epoch (0-based) at which training was stopped; 0 when it was not.
  int stopped_epoch() const { return stopped_epoch_; }
  // The epoch (0-based) with the best monitored value so far.
  int best_epoch() const { return best_epoch_; }
  // Epochs since the last improvement.
  int wait() const { return wait_; }
  const EarlyStoppingOptions& options() const { return options_; }

 private:
  EarlyStoppingOptions options_;
  int wait_ = 0;
  int stopped_epoch_ = 0;
  int best_epoch_ = 0;
  std::vector<Tensor> best_weights_;
  bool has_best_weights_ = false;
};

}  // namespace ember::callbacks
