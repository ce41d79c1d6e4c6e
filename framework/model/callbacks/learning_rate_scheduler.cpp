#include "framework/model/callbacks/learning_rate_scheduler.h"

#include <iostream>

#include "framework/core/error.h"
#include "framework/core/python_format.h"
#include "framework/model/model.h"
#include "optimizers/optimizer.h"

namespace ember::callbacks {

LearningRateScheduler::LearningRateScheduler(std::function<double(int, double)> schedule, int verbose)
    : schedule_(std::move(schedule)), verbose_(verbose) {
  EMBER_CHECK(schedule_, InvalidArgument) << "LearningRateScheduler: schedule is empty; expected a function "
                                             "(epoch, learning rate) -> new learning rate";
}

void LearningRateScheduler::on_epoch_begin(int epoch, const Logs&) {
  EMBER_CHECK(model(), FailedPrecondition)
      << "LearningRateScheduler: needs the model's optimizer, but the callback has no model (set_model)";
  optimizers::Optimizer& optimizer = model()->optimizer();
  const double learning_rate = schedule_(epoch, optimizer.learning_rate());
  optimizer.set_learning_rate(learning_rate);
  if (verbose_ > 0)
    std::cout << "\nEpoch " << epoch + 1 << ": LearningRateScheduler setting learning rate to "
              << python_float_repr(learning_rate) << ".\n"
              << std::flush;
}

void LearningRateScheduler::on_epoch_end(int, Logs& logs) {
  EMBER_CHECK(model(), FailedPrecondition)
      << "LearningRateScheduler: needs the model's optimizer, but the callback has no model (set_model)";
  logs["learning_rate"] = model()->optimizer().learning_rate();
}

}  // namespace ember::callbacks
