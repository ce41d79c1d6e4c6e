// ReduceLROnPlateau and LearningRateScheduler (Keras 3 keras/src/callbacks/), driven through their
// hooks with a real compiled model whose SGD learning rate they change.
#include <catch2/catch.hpp>

#include "tests/framework/model/callbacks/callback_testing.h"

using namespace ember;
using namespace ember::callbacks;
using namespace ember::testing;

namespace {

// The learning rates as the float32 variable holds them, read back as doubles (what Keras logs).
constexpr double kLr01 = 0.10000000149011612;      // float32(0.1)
constexpr double kLr005 = 0.05000000074505806;     // float32(0.05)
constexpr double kLr0025 = 0.02500000037252903;    // float32(0.025)
constexpr double kLr00125 = 0.012500000186264515;  // float32(0.0125)

// Runs epochs with the monitored key taking the given values; returns each epoch's logged learning rate.
std::vector<double> run_epochs(Callback& cb, Model& model, const std::string& key, const std::vector<double>& values) {
  cb.set_model(&model);
  cb.on_train_begin({});
  std::vector<double> lrs;
  for (size_t e = 0; e < values.size(); ++e) {
    cb.on_epoch_begin(static_cast<int>(e), {});
    Logs logs{{"loss", 1.0}, {key, values[e]}};
    cb.on_epoch_end(static_cast<int>(e), logs);
    lrs.push_back(logs.at("learning_rate"));
  }
  cb.on_train_end({});
  return lrs;
}

}  // namespace

TEST_CASE("ReduceLROnPlateau multiplies the rate by factor after patience epochs", "[callbacks][lr]") {
  auto model = small_model(0.1);
  ReduceLROnPlateau cb({.factor = 0.5, .patience = 1, .verbose = 1});
  Capture out(std::cout);
  // The logged rate is the one the epoch ran with, written before any reduction.
  CHECK(run_epochs(cb, *model, "val_loss", {1.0, 1.0, 1.0, 0.5}) == std::vector<double>{kLr01, kLr01, kLr005, kLr0025});
  CHECK(model->optimizer().learning_rate() == kLr0025);
  CHECK(out.str() ==
        "\nEpoch 2: ReduceLROnPlateau reducing learning rate to 0.05000000074505806.\n"
        "\nEpoch 3: ReduceLROnPlateau reducing learning rate to 0.02500000037252903.\n");
  // An improvement smaller than min_delta (1e-4) does not count.
  auto model2 = small_model(0.1);
  ReduceLROnPlateau cb2({.factor = 0.5, .patience = 1});
  run_epochs(cb2, *model2, "val_loss", {1.0, 0.99995});
  CHECK(model2->optimizer().learning_rate() == kLr005);
}

TEST_CASE("ReduceLROnPlateau cooldown skips counting after a reduction", "[callbacks][lr]") {
  auto model = small_model(0.1);
  ReduceLROnPlateau cb({.factor = 0.5, .patience = 1, .cooldown = 2});
  CHECK(run_epochs(cb, *model, "val_loss", {1, 1, 1, 1, 1, 1}) ==
        std::vector<double>{kLr01, kLr01, kLr005, kLr005, kLr0025, kLr0025});
  CHECK(model->optimizer().learning_rate() == kLr00125);
  // Without cooldown it reduces every epoch after the first.
  auto model2 = small_model(0.1);
  ReduceLROnPlateau nocool({.factor = 0.5, .patience = 1});
  CHECK(run_epochs(nocool, *model2, "val_loss", {1, 1, 1, 1}) == std::vector<double>{kLr01, kLr01, kLr005, kLr0025});
}

TEST_CASE("ReduceLROnPlateau never goes below min_lr", "[callbacks][lr]") {
  auto model = small_model(0.1);
  ReduceLROnPlateau cb({.factor = 0.5, .patience = 0, .verbose = 1, .min_lr = 0.03});
  Capture out(std::cout);
  run_epochs(cb, *model, "val_loss", {1, 1, 1, 1, 1});
  CHECK(model->optimizer().learning_rate() == static_cast<double>(0.03f));
  // At min_lr (as float32) nothing more is printed.
  CHECK(out.str() ==
        "\nEpoch 2: ReduceLROnPlateau reducing learning rate to 0.05000000074505806.\n"
        "\nEpoch 3: ReduceLROnPlateau reducing learning rate to 0.03.\n");
}

TEST_CASE("ReduceLROnPlateau mode: auto follows the compiled metric's direction", "[callbacks][lr]") {
  auto model = small_model(0.1, {"accuracy"});
  ReduceLROnPlateau acc({.monitor = "val_accuracy", .factor = 0.5, .patience = 1});
  CHECK(run_epochs(acc, *model, "val_accuracy", {0.5, 0.6, 0.6}) == std::vector<double>{kLr01, kLr01, kLr01});
  CHECK(model->optimizer().learning_rate() == kLr005);
  auto model2 = small_model(0.1);
  ReduceLROnPlateau mx({.monitor = "score", .factor = 0.5, .patience = 1, .mode = "max"});
  run_epochs(mx, *model2, "score", {0.5, 0.4});
  CHECK(model2->optimizer().learning_rate() == kLr005);

  CHECK_THROWS_WITH(ReduceLROnPlateau({.factor = 1.0}),
                    "ReduceLROnPlateau does not support a factor >= 1.0. Received factor=1");
  CHECK_THROWS_WITH(ReduceLROnPlateau({.mode = "up"}), Catch::Contains("mode must be"));
  // Keras 3 (unlike tf-keras's guess from "acc" in the name) cannot tell the direction of an unknown name.
  auto model3 = small_model(0.1);
  ReduceLROnPlateau unknown({.monitor = "val_score"});
  CHECK_THROWS_WITH(run_epochs(unknown, *model3, "val_score", {0.5}), Catch::Contains("monitor=val_score"));
}

TEST_CASE("ReduceLROnPlateau warns when the monitored value is missing", "[callbacks][lr]") {
  auto model = small_model(0.1);
  ReduceLROnPlateau cb({.patience = 0});
  cb.set_model(model.get());
  cb.on_train_begin({});
  Capture err(std::cerr);
  Logs logs{{"loss", 1.0}};
  cb.on_epoch_end(0, logs);
  CHECK(logs.at("learning_rate") == kLr01);
  CHECK(err.str() ==
        "[ember] [warning] Learning rate reduction is conditioned on metric `val_loss` which is not available. "
        "Available metrics are: loss,learning_rate.\n");
}

TEST_CASE("LearningRateScheduler sets the rate each epoch and logs it", "[callbacks][lr]") {
  auto model = small_model(0.1);
  std::vector<std::pair<int, double>> calls;
  LearningRateScheduler cb(
      [&](int epoch, double lr) {
        calls.emplace_back(epoch, lr);
        return epoch < 1 ? lr : lr * 0.5;
      },
      1);
  Capture out(std::cout);
  CHECK(run_epochs(cb, *model, "val_loss", {1, 1, 1}) == std::vector<double>{kLr01, kLr005, kLr0025});
  CHECK(calls == std::vector<std::pair<int, double>>{{0, kLr01}, {1, kLr01}, {2, kLr005}});
  CHECK(out.str() ==
        "\nEpoch 1: LearningRateScheduler setting learning rate to 0.10000000149011612.\n"
        "\nEpoch 2: LearningRateScheduler setting learning rate to 0.05000000074505806.\n"
        "\nEpoch 3: LearningRateScheduler setting learning rate to 0.02500000037252903.\n");

  CHECK_THROWS_WITH(LearningRateScheduler(nullptr), Catch::Contains("schedule is empty"));
  // A rate that is a schedule cannot be set (as in Keras).
  backend::clear_session();
  Sequential scheduled({layers::Input({3}), layers::Dense(1)});
  scheduled.compile(
      {.optimizer = optimizers::SGD({.learning_rate = optimizers::schedules::ExponentialDecay(
                                         {.initial_learning_rate = 0.1, .decay_steps = 10, .decay_rate = 0.9})}),
       .loss = "mse"});
  LearningRateScheduler fixed([](int, double) { return 0.01; });
  fixed.set_model(&scheduled);
  CHECK_THROWS_AS(fixed.on_epoch_begin(0, {}), FailedPrecondition);
  // Without a compiled model there is no optimizer.
  LearningRateScheduler orphan([](int, double lr) { return lr; });
  CHECK_THROWS_AS(orphan.on_epoch_begin(0, {}), FailedPrecondition);
}
