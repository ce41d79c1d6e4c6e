#pragma once
// ReduceLROnPlateau (Keras 3: keras/src/callbacks/reduce_lr_on_plateau.py): multiplies the optimizer's
// learning rate by `factor` once the monitored quantity has not improved for `patience` epochs.
#include <string>

#include "framework/model/callbacks/monitor_callback.h"

namespace ember::callbacks {

struct ReduceLROnPlateauOptions {
  std::string monitor = "val_loss";
  double factor = 0.1;  // new_lr = max(lr * factor, min_lr); must be < 1
  int patience = 10;    // epochs without improvement before reducing
  int verbose = 0;      // 1: print "Epoch N: ReduceLROnPlateau reducing learning rate to X."
  // "min", "max", or "auto": "loss"/"val_loss" minimised, a compiled metric in its direction (as
  // EarlyStopping); Keras 3's rule (tf-keras guessed from "acc" in the name).
  std::string mode = "auto";
  double min_delta = 1e-4;  // improvements smaller than this do not count
  int cooldown = 0;         // epochs after a reduction during which no waiting is counted
  double min_lr = 0.0;
};

class ReduceLROnPlateau : public MonitorCallback {
  EMBER_CALLBACK(ReduceLROnPlateau)
 public:
  explicit ReduceLROnPlateau(ReduceLROnPlateauOptions options = {});

  void on_train_begin(const Logs& logs) override;
  // Also writes logs["learning_rate"] (the rate the epoch ran with).
  void on_epoch_end(int epoch, Logs& logs) override;
  bool implements_train_batch_hooks() const override { return false; }
  bool implements_test_batch_hooks() const override { return false; }

  bool in_cooldown() const { return cooldown_counter_ > 0; }
  int wait() const { return wait_; }
  const ReduceLROnPlateauOptions& options() const { return options_; }

 private:
  void reset();

  ReduceLROnPlateauOptions options_;
  int wait_ = 0;
  int cooldown_counter_ = 0;
};

}  // namespace ember::callbacks
