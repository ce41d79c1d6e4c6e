#include "framework/model/callbacks/reduce_lr_on_plateau.h"

#include <algorithm>
#include <iostream>

#include "framework/core/error.h"
#include "framework/core/python_format.h"
#include "framework/model/model.h"
#include "optimizers/optimizer.h"

namespace ember::callbacks {

ReduceLROnPlateau::ReduceLROnPlateau(ReduceLROnPlateauOptions options)
    : MonitorCallback("ReduceLROnPlateau", options.monitor, options.mode, std::nullopt, options.min_delta),
      options_(std::move(options)) {
  EMBER_CHECK(options_.factor < 1.0, InvalidArgument)
      << "ReduceLROnPlateau does not support a factor >= 1.0. Received factor=" << options_.factor;
  EMBER_CHECK(options_.patience >= 0 && options_.cooldown >= 0, InvalidArgument)
      << "ReduceLROnPlateau: patience and cooldown must be >= 0; got patience=" << options_.patience
      << ", cooldown=" << options_.cooldown;
  reset();
}

void ReduceLROnPlateau::reset() {
  best_.reset();
  cooldown_counter_ = 0;
  wait_ = 0;
}

void ReduceLROnPlateau::on_train_begin(const Logs&) { reset(); }

void ReduceLROnPlateau::on_epoch_end(int epoch, Logs& logs) {
  EMBER_CHECK(model(), FailedPrecondition)
      << "ReduceLROnPlateau: needs the model's optimizer, but the callback has no model (set_model)";
  set_monitor_op();
  optimizers::Optimizer& optimizer = model()->optimizer();
  logs["learning_rate"] = optimizer.learning_rate();
  const std::optional<double> current = monitored_value(logs, "Learning rate reduction is conditioned on metric", ".");
  if (!current) return;
  if (in_cooldown()) {
    --cooldown_counter_;
    wait_ = 0;
  }
  if (is_improvement(*current, best_)) {
    best_ = *current;
    wait_ = 0;
  } else if (!in_cooldown()) {
    ++wait_;
    if (wait_ >= options_.patience) {
      const double old_lr = optimizer.learning_rate();
      // The rate lives in a float32 variable, so Keras compares it with min_lr rounded to float32.
      if (old_lr > static_cast<double>(static_cast<float>(options_.min_lr))) {
        const double new_lr = std::max(old_lr * options_.factor, options_.min_lr);
        optimizer.set_learning_rate(new_lr);
        if (options_.verbose > 0)
          std::cout << "\nEpoch " << epoch + 1 << ": ReduceLROnPlateau reducing learning rate to "
                    << python_float_repr(new_lr) << ".\n"
                    << std::flush;
        cooldown_counter_ = options_.cooldown;
        wait_ = 0;
      }
    }
  }
}

}  // namespace ember::callbacks
