// Callbacks (Keras: keras.callbacks) hook into fit: EarlyStopping ends training once the validation loss
// stops improving, ModelCheckpoint keeps the best model on disk, TensorBoard writes logs to plot, and a
// callback of your own can do anything at the end of an epoch or batch.
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>

#include "framework/ember.h"
using namespace ember;
namespace fs = std::filesystem;

// A callback of your own: override the hooks you need (on_epoch_end, on_train_batch_end, ...).
struct BestSoFar : callbacks::Callback {
  EMBER_CALLBACK(BestSoFar)
  double best = 1e30;
  void on_epoch_end(int epoch, Logs& logs) override {
    if (logs.at("val_loss") < best) {
      best = logs.at("val_loss");
      std::cout << "epoch " << epoch + 1 << ": new best val_loss " << best << "\n";
    }
  }
};

int main() {
  random::set_seed(7);  // the same initial weights and shuffles on every run (tf.random.set_seed)
  // Few images and a big network: it soon learns the training images by heart and gets worse on others.
  auto [train, test] = datasets::fashion_mnist::load_data();
  Tensor x_train = ops::cast(ops::slice(train.x, {0, 0, 0}, {1000, 28, 28}), DType::Float32) / 255.0;
  Tensor y_train = ops::slice(train.y, {0}, {1000});
  Tensor x_val = ops::cast(ops::slice(test.x, {0, 0, 0}, {1000, 28, 28}), DType::Float32) / 255.0;
  Tensor y_val = ops::slice(test.y, {0}, {1000});

  Sequential model({layers::Input({28, 28}), layers::Flatten(), layers::Dense(512, {.activation = "relu"}),
                    layers::Dense(512, {.activation = "relu"}), layers::Dense(10)});
  model.compile({.optimizer = "adam",
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});

  fs::path dir = fs::temp_directory_path() / "ember_callbacks_example";
  fs::remove_all(dir);
  // Shared pointers let us read the callbacks after fit; temporaries work too when that is not needed.
  auto early_stopping = std::make_shared<callbacks::EarlyStopping>(
      callbacks::EarlyStoppingOptions{.monitor = "val_loss", .patience = 3, .verbose = 1, .restore_best_weights = true});
  auto best = std::make_shared<BestSoFar>();
  History history = model.fit(x_train, y_train, {
      .epochs = 50,  // an upper bound: EarlyStopping ends sooner
      .verbose = 0,
      .callbacks = {early_stopping, best,
                    callbacks::ModelCheckpoint((dir / "best.keras").string(), {.save_best_only = true}),
                    callbacks::TensorBoard((dir / "logs").string())},
      .validation_data = {x_val, y_val},
  });
  std::cout << "stopped after " << history.epoch.size() << " of 50 epochs; the best was epoch "
            << early_stopping->best_epoch() + 1 << "\n";

  // restore_best_weights put the best epoch's weights back; the checkpoint holds the same model.
  double restored = model.evaluate(x_val, y_val, {.verbose = 0}).at("loss");
  double saved = models::load_model((dir / "best.keras").string()).evaluate(x_val, y_val, {.verbose = 0}).at("loss");
  std::cout << "val_loss: best " << best->best << ", restored model " << restored << ", saved model " << saved << "\n";

  // TensorBoard wrote event files under logs/train and logs/validation.
  int event_files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir / "logs"))
    event_files += entry.path().filename().string().starts_with("events.out.tfevents");
  std::cout << event_files << " TensorBoard event files; view them with: tensorboard --logdir " << (dir / "logs").string()
            << "\n";

  bool ok = history.epoch.size() < 50 && std::abs(restored - best->best) < 1e-4 && std::abs(saved - best->best) < 1e-4 &&
            event_files == 2;
  return ok ? 0 : 1;
}
