#pragma once
// MonitorCallback (Keras 3: keras/src/callbacks/monitor_callback.py): the base of callbacks that watch one
// logged quantity and decide whether it improved (EarlyStopping, ReduceLROnPlateau, ModelCheckpoint).
#include <optional>
#include <string>

#include "framework/model/callbacks/callback.h"

namespace ember::callbacks {

class MonitorCallback : public Callback {
 public:
  const std::string& monitor() const { return monitor_; }
  const std::string& mode() const { return mode_; }
  // The best monitored value so far (starts at the baseline; unset when there is none yet).
  std::optional<double> best() const { return best_; }

 protected:
  // who: the callback's class name for messages; mode "auto", "min" or "max" (anything else is
  // InvalidArgument; Keras only warns and falls back to "auto"); baseline: the initial best.
  MonitorCallback(std::string who, std::string monitor, std::string mode, std::optional<double> baseline,
                  double min_delta);

  // Resolves the direction once the model's metrics exist (Keras delays it to the first epoch end):
  // "min"/"max" as given; in "auto" mode "loss"/"val_loss" are minimised and a compiled metric follows its
  // direction() (e.g. "accuracy" maximised); any other name is InvalidArgument. Does nothing once resolved.
  void set_monitor_op();
  // value beats reference by more than min_delta in the monitored direction (no reference: true).
  bool is_improvement(double value, std::optional<double> reference) const;
  // The monitored value in logs, or unset after printing Keras's warning (`what` starts the sentence, e.g.
  // "Early stopping conditioned on metric"; `end` ends it, as each Keras callback spells it).
  std::optional<double> monitored_value(const Logs& logs, const std::string& what, const char* end = "") const;

  std::optional<double> best_;

 private:
  std::string who_, monitor_, mode_;
  double min_delta_;                // signed once resolved: negative when minimising
  std::optional<bool> minimize_;    // unset until set_monitor_op
};

}  // namespace ember::callbacks
