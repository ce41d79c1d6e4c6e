// The functional API with two inputs and two outputs (Keras: keras.Model(inputs=[...], outputs=[...])):
// a classifier head and a regression head share one trunk; each output has its own loss.
#include <iostream>

#include "framework/ember.h"
using namespace ember;

int main() {
  random::set_seed(7);  // the same initial weights and shuffles on every run (tf.random.set_seed)
  // Symbolic inputs: no data yet, only per-sample shapes. Calling layers on them records a graph.
  Tensor features = layers::Input({8}, {.name = "features"});
  Tensor extra = layers::Input({4}, {.name = "extra"});
  Tensor h = layers::Concatenate()({features, extra});  // [batch, 12]
  h = layers::Dense(32, {.activation = "relu"})(h);
  h = layers::Dense(32, {.activation = "relu"})(h);
  Tensor category = layers::Dense(3, {.name = "category"})(h);  // logits of 3 classes
  Tensor score = layers::Dense(1, {.name = "score"})(h);        // one number
  Model model({features, extra}, {category, score}, {.name = "multi_io"});
  model.summary();

  // Made-up data: the class is which of the first three features (plus noise from `extra`) is largest,
  // the score a weighted sum of features.
  const int64_t n = 2000;
  Tensor x1 = random::normal({n, 8}, {.seed = 1});
  Tensor x2 = random::normal({n, 4}, {.seed = 2});
  Tensor y_category = ops::argmax(ops::slice(x1, {0, 0}, {n, 3}) + 0.3 * ops::slice(x2, {0, 0}, {n, 3}), 1);
  Tensor y_score = ops::slice(x1, {0, 3}, {n, 1}) - 0.5 * ops::slice(x2, {0, 3}, {n, 1});

  // One loss per output, in the order of the outputs; the total loss is their weighted sum.
  // Metrics are per output too: accuracy for the classes, mean absolute error for the score.
  model.compile({
      .optimizer = optimizers::Adam({.learning_rate = 0.01}),
      .loss = {losses::SparseCategoricalCrossentropy({.from_logits = true}), "mse"},
      .metrics = {{"accuracy"}, {"mae"}},
      .loss_weights = {1.0, 0.5},
  });
  // Inputs and targets are lists in the order the model was given them.
  History history = model.fit({x1, x2}, {y_category, y_score}, {.batch_size = 64, .epochs = 10, .verbose = 2});
  // The log has the total loss, one loss per output and each output's metrics, named after the output layers.
  for (const char* key : {"loss", "category_loss", "score_loss", "category_accuracy", "score_mae"})
    std::cout << key << ": " << history.history.at(key).front() << " -> " << history.history.at(key).back() << "\n";

  // predict_outputs gives one tensor per output.
  std::vector<Tensor> predicted = model.predict_outputs({x1, x2}, {.verbose = 0});
  double accuracy =
      ops::reduce_mean(ops::cast(ops::equal(ops::argmax(predicted[0], 1), y_category), DType::Float32)).item<float>();
  double score_mse = ops::reduce_mean(ops::square(predicted[1] - y_score)).item<float>();
  std::cout << "category accuracy: " << accuracy << ", score mean squared error: " << score_mse << "\n";

  bool ok = accuracy > 0.85 && score_mse < 0.1;
  std::cout << (ok ? "both heads learned\n" : "a head did not learn\n");
  return ok ? 0 : 1;
}
