#pragma once
// LearningRateScheduler (Keras 3: keras/src/callbacks/learning_rate_scheduler.py): at each epoch's start
// sets the optimizer's learning rate to schedule(epoch, current rate).
#include <functional>

#include "framework/model/callbacks/callback.h"

namespace ember::callbacks {

class LearningRateScheduler : public Callback {
  EMBER_CALLBACK(LearningRateScheduler)
 public:
  // schedule(epoch (0-based), current learning rate) -> the new learning rate. verbose 1 prints
  // "Epoch N: LearningRateScheduler setting learning rate to X." each epoch.
  explicit LearningRateScheduler(std::function<double(int epoch, double lr)> schedule, int verbose = 0);

  void on_epoch_begin(int epoch, const Logs& logs) override;
  // Writes logs["learning_rate"].
  void on_epoch_end(int epoch, Logs& logs) override;
  bool implements_train_batch_hooks() const override { return false; }
  bool implements_test_batch_hooks() const override { return false; }

 private:
  std::function<double(int, double)> schedule_;
  int verbose_;
};

}  // namespace ember::callbacks
