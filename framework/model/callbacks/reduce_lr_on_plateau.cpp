#include "framework/model/callbacks/reduce_lr_on_plateau.h"

#include <algorithm>
#include <iostream>
#include <limits>

#include "framework/core/error.h"
#include "framework/model/callbacks/python_format.h"
#include "framework/model/model.h"
#include "optimizers/optimizer.h"

namespace ember::callbacks {

ReduceLROnPlateau::ReduceLROnPlateau(ReduceLROnPlateauOptions options) : options_(std::move(options)) {
  EMBER_CHECK(options_.factor < 1.0, InvalidArgument)
      << "ReduceLROnPlateau does not support a factor >= 1.0. Received factor=" << options_.factor;
  // Keras only warns about an unknown mode and falls back to "auto"; a typo here is an error.
  EMBER_CHECK(options_.mode == "auto" || options_.mode == "min" || options_.mode == "max", InvalidArgument)
      << "ReduceLROnPlateau: mode must be \"auto\", \"min\" or \"max\"; got \"" << options_.mode << "\"";
  EMBER_CHECK(options_.patience >= 0 && options_.cooldown >= 0, InvalidArgument)
      << "ReduceLROnPlateau: patience and cooldown must be >= 0; got patience=" << options_.patience
      << ", cooldown=" << options_.cooldown;
  reset();
}

void ReduceLROnPlateau::reset() {
  minimize_ = options_.mode == "min" || (options_.mode == "auto" && options_.monitor.find("acc") == std::string::npos);
  best_ = minimize_ ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
  cooldown_counter_ = 0;
  wait_ = 0;
}

bool ReduceLROnPlateau::improves(double current) const {
  return minimize_ ? current < best_ - options_.min_delta : current > best_ + options_.min_delta;
}

void ReduceLROnPlateau::on_train_begin(const Logs&) { reset(); }

void ReduceLROnPlateau::on_epoch_end(int epoch, Logs& logs) {
  EMBER_CHECK(model(), FailedPrecondition)
      << "ReduceLROnPlateau: needs the model's optimizer, but the callback has no model (set_model)";
  optimizers::Optimizer& optimizer = model()->optimizer();
  logs["learning_rate"] = optimizer.learning_rate();
  const std::optional<double> current = logs.get(options_.monitor);
  if (!current) {
    std::string keys;
    for (const auto& item : logs) keys += (keys.empty() ? "" : ",") + item.first;
    std::cerr << "UserWarning: Learning rate reduction is conditioned on metric `" << options_.monitor
              << "` which is not available. Available metrics are: " << keys << ".\n";
    return;
  }
  if (in_cooldown()) {
    --cooldown_counter_;
    wait_ = 0;
  }
  if (improves(*current)) {
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
