// Saving and loading (Keras's file formats, readable by Python Keras too):
//   model.weights.h5  the weights (and optimizer state) only, Keras 3 layout: load into the same architecture
//   model.keras       Keras 3's whole-model zip: architecture, weights, compile settings, optimizer state
//   model.h5          the legacy (tf-keras) whole-model HDF5 file
// and resuming training from a loaded model.
#include <filesystem>
#include <iostream>

#include "framework/ember.h"
using namespace ember;
namespace fs = std::filesystem;

Sequential make_model() {
  return Sequential({layers::Input({4}), layers::Dense(16, {.activation = "relu"}), layers::Dense(1)});
}

// How many optimizer steps the model has taken.
int64_t steps_taken(const Model& model) { return model.optimizer().iterations().value().item<int64_t>(); }

// The largest difference between two models' predictions.
float max_difference(Model& a, Model& b, const Tensor& x) {
  return ops::reduce_max(ops::abs(a.predict(x, {.verbose = 0}) - b.predict(x, {.verbose = 0}))).item<float>();
}

int main() {
  Tensor x = random::normal({512, 4}, {.seed = 1});
  Tensor y = ops::reduce_sum(ops::square(x), {1}, /*keepdims=*/true);  // a target to learn
  fs::path dir = fs::temp_directory_path() / "ember_checkpoints_example";
  fs::create_directories(dir);

  Sequential model = make_model();
  model.compile({.optimizer = "adam", .loss = "mse"});
  model.fit(x, y, {.batch_size = 32, .epochs = 2, .verbose = 0});  // 2 x 16 steps
  model.save_weights((dir / "model.weights.h5").string());
  model.save((dir / "model.keras").string());
  model.save((dir / "model.h5").string());
  for (const char* name : {"model.weights.h5", "model.keras", "model.h5"})
    std::cout << (dir / name).string() << ": " << fs::file_size(dir / name) << " bytes\n";

  // Weights only: make the same architecture in code, then load the values into it.
  Sequential same = make_model();
  same.load_weights((dir / "model.weights.h5").string());
  float weights_diff = max_difference(model, same, x);
  std::cout << "weights file: predictions differ by " << weights_diff << "\n";

  // Whole models: nothing to rebuild; the loaded model is compiled, with the optimizer's state.
  Model from_keras = models::load_model((dir / "model.keras").string());
  Model from_h5 = models::load_model((dir / "model.h5").string());
  float keras_diff = max_difference(model, from_keras, x), h5_diff = max_difference(model, from_h5, x);
  int64_t saved_steps = steps_taken(from_keras);
  std::cout << ".keras: predictions differ by " << keras_diff << ", " << saved_steps << " optimizer steps so far\n"
            << ".h5:    predictions differ by " << h5_diff << "\n";

  // Resume: train epochs 3 and 4 from where the saved model stopped (Adam's moments included).
  double before = from_keras.evaluate(x, y, {.verbose = 0}).at("loss");
  from_keras.fit(x, y, {.batch_size = 32, .epochs = 4, .verbose = 2, .initial_epoch = 2});
  double after = from_keras.evaluate(x, y, {.verbose = 0}).at("loss");
  std::cout << "resumed: loss " << before << " -> " << after << ", " << steps_taken(from_keras) << " steps\n";
  fs::remove_all(dir);

  bool ok = weights_diff == 0 && keras_diff == 0 && h5_diff == 0 && saved_steps == 32 &&
            steps_taken(from_keras) == 64 && after < before;
  return ok ? 0 : 1;
}
