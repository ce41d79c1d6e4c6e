// EarlyStopping (Keras 3 keras/src/callbacks/early_stopping.py), driven through its hooks the way fit
// calls them, with a real compiled model.
#include <catch2/catch.hpp>

#include "tests/framework/model/callbacks/callback_testing.h"

using namespace ember;
using namespace ember::callbacks;
using namespace ember::testing;

namespace {

// Runs epochs as fit would, the monitored key taking the given values, until the callback stops
// training. Each epoch moves the weights, so restored weights can be told apart. Returns the epochs run.
int run_epochs(EarlyStopping& es, Model& model, const std::string& key, const std::vector<double>& values,
               std::vector<std::vector<Tensor>>* weights_per_epoch = nullptr) {
  es.set_model(&model);
  model.stop_training = false;
  es.on_train_begin({});
  int epochs = 0;
  for (size_t e = 0; e < values.size() && !model.stop_training; ++e) {
    es.on_epoch_begin(static_cast<int>(e), {});
    nudge_weights(model, 0.125f);
    if (weights_per_epoch) weights_per_epoch->push_back(model.get_weights());
    Logs logs{{"loss", 1.0}, {key, values[e]}};
    es.on_epoch_end(static_cast<int>(e), logs);
    ++epochs;
  }
  es.on_train_end({});
  return epochs;
}

}  // namespace

TEST_CASE("EarlyStopping stops after patience epochs without improvement", "[callbacks][early_stopping]") {
  auto model = small_model();
  EarlyStopping es({.monitor = "val_loss", .patience = 2, .verbose = 1});
  Capture out(std::cout);
  CHECK(run_epochs(es, *model, "val_loss", {1.0, 0.9, 0.95, 0.92, 0.5, 0.4}) == 4);
  CHECK(model->stop_training);
  CHECK(es.stopped_epoch() == 3);
  CHECK(es.best_epoch() == 1);
  CHECK(es.best() == 0.9);
  CHECK(out.str() == "Epoch 4: early stopping\n");

  // The instance can be reused: on_train_begin resets it.
  CHECK(run_epochs(es, *model, "val_loss", {3.0, 2.0, 1.0}) == 3);
  CHECK(es.stopped_epoch() == 0);
  CHECK(es.best() == 1.0);
}

TEST_CASE("EarlyStopping patience 0 stops at the first epoch without improvement", "[callbacks][early_stopping]") {
  auto model = small_model();
  EarlyStopping es({.monitor = "loss_x", .mode = "min"});
  CHECK(run_epochs(es, *model, "loss_x", {1.0, 1.0, 0.5}) == 2);
  CHECK(es.stopped_epoch() == 1);
}

TEST_CASE("EarlyStopping min_delta: smaller changes are no improvement", "[callbacks][early_stopping]") {
  auto model = small_model();
  EarlyStopping strict({.min_delta = -0.1, .patience = 1});  // the sign is ignored, as in Keras
  CHECK(run_epochs(strict, *model, "val_loss", {1.0, 0.95, 0.85}) == 2);
  CHECK(strict.stopped_epoch() == 1);
  CHECK(strict.best() == 1.0);

  EarlyStopping loose({.patience = 1});
  CHECK(run_epochs(loose, *model, "val_loss", {1.0, 0.95, 0.85}) == 3);
  CHECK(loose.stopped_epoch() == 0);
  CHECK(loose.best() == 0.85);
}

TEST_CASE("EarlyStopping baseline: the wait restarts only when the baseline is beaten", "[callbacks][early_stopping]") {
  auto model = small_model();
  // Never beating 0.5: the first epoch already counts towards patience.
  EarlyStopping es({.patience = 2, .baseline = 0.5});
  CHECK(run_epochs(es, *model, "val_loss", {1.0, 1.0, 1.0, 1.0}) == 2);
  CHECK(es.stopped_epoch() == 1);
  // Beating it: as without a baseline.
  CHECK(run_epochs(es, *model, "val_loss", {0.4, 0.4, 0.4, 0.4}) == 3);
  CHECK(es.stopped_epoch() == 2);
  EarlyStopping none({.patience = 2});
  CHECK(run_epochs(none, *model, "val_loss", {1.0, 1.0, 1.0, 1.0}) == 3);
}

TEST_CASE("EarlyStopping start_from_epoch leaves the first epochs unmonitored", "[callbacks][early_stopping]") {
  auto model = small_model();
  EarlyStopping warm({.patience = 0, .start_from_epoch = 2});
  CHECK(run_epochs(warm, *model, "val_loss", {5, 6, 7, 8, 9}) == 4);
  CHECK(warm.stopped_epoch() == 3);
  CHECK(warm.best_epoch() == 2);
  EarlyStopping cold({.patience = 0});
  CHECK(run_epochs(cold, *model, "val_loss", {5, 6, 7, 8, 9}) == 2);
}

TEST_CASE("EarlyStopping mode auto follows the metric's direction", "[callbacks][early_stopping]") {
  auto model = small_model(0.01, {"accuracy", "mae"});
  // accuracy is maximised: rising values are improvements.
  EarlyStopping acc({.monitor = "val_accuracy"});
  CHECK(run_epochs(acc, *model, "val_accuracy", {0.5, 0.6, 0.55}) == 3);
  CHECK(acc.stopped_epoch() == 2);
  CHECK(acc.best() == 0.6);
  // mae and loss are minimised.
  EarlyStopping mae({.monitor = "mae"});
  CHECK(run_epochs(mae, *model, "mae", {0.5, 0.6}) == 2);
  CHECK(mae.best() == 0.5);
  EarlyStopping loss({.monitor = "loss_", .mode = "max"});
  CHECK(run_epochs(loss, *model, "loss_", {0.5, 0.6, 0.55}) == 3);
  CHECK(loss.best() == 0.6);
  // A name with no known direction needs an explicit mode.
  EarlyStopping unknown({.monitor = "val_score"});
  CHECK_THROWS_WITH(run_epochs(unknown, *model, "val_score", {1.0}),
                    Catch::Contains("monitor=val_score, but") && Catch::Contains("`.mode = \"max\"`"));
  CHECK_THROWS_WITH(EarlyStopping({.mode = "maximum"}), Catch::Contains("mode must be \"auto\", \"min\" or \"max\""));
  CHECK_THROWS_AS(EarlyStopping({.patience = -1}), InvalidArgument);
}

TEST_CASE("EarlyStopping restore_best_weights restores the best epoch's weights", "[callbacks][early_stopping]") {
  auto model = small_model();
  EarlyStopping es({.patience = 2, .verbose = 1, .restore_best_weights = true});
  std::vector<std::vector<Tensor>> weights;
  Capture out(std::cout);
  CHECK(run_epochs(es, *model, "val_loss", {1.0, 0.5, 0.7, 0.8, 0.1}, &weights) == 4);
  CHECK(es.best_epoch() == 1);
  CHECK(same_weights(model->get_weights(), weights[1]));
  CHECK_FALSE(same_weights(model->get_weights(), weights[3]));
  CHECK(out.str() == "Epoch 4: early stopping\nRestoring model weights from the end of the best epoch: 2.\n");

  // Without stopping, the best weights are restored too (Keras restores whenever it has them).
  EarlyStopping keep({.patience = 5, .restore_best_weights = true});
  weights.clear();
  CHECK(run_epochs(keep, *model, "val_loss", {1.0, 0.5, 0.7}, &weights) == 3);
  CHECK(same_weights(model->get_weights(), weights[1]));
}

TEST_CASE("EarlyStopping warns when the monitored value is missing", "[callbacks][early_stopping]") {
  auto model = small_model();
  EarlyStopping es({.patience = 0});
  es.set_model(model.get());
  es.on_train_begin({});
  Capture err(std::cerr);
  Logs logs{{"loss", 1.0}, {"mse", 2.0}};
  es.on_epoch_end(0, logs);
  es.on_epoch_end(1, logs);
  CHECK_FALSE(model->stop_training);
  CHECK(err.str() ==
        "[ember] [warning] Early stopping conditioned on metric `val_loss` which is not available. Available metrics are: "
        "loss,mse\n"
        "[ember] [warning] Early stopping conditioned on metric `val_loss` which is not available. Available metrics are: "
        "loss,mse\n");
}

TEST_CASE("EarlyStopping without a model cannot restore or stop", "[callbacks][early_stopping]") {
  EarlyStopping restore({.monitor = "loss", .restore_best_weights = true});
  restore.on_train_begin({});
  Logs logs{{"loss", 1.0}};
  CHECK_THROWS_AS(restore.on_epoch_end(0, logs), FailedPrecondition);
  EarlyStopping stop({.monitor = "loss"});
  stop.on_train_begin({});
  stop.on_epoch_end(0, logs);
  CHECK_THROWS_WITH(stop.on_epoch_end(1, logs), Catch::Contains("cannot stop training without a model"));
}
