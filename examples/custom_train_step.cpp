// A training loop written by hand (Keras guide: "Writing a training loop from scratch"): iterate over a
// Dataset, run the model under a GradientTape, take the gradients and let the optimizer apply them.
// What fit() does for you, spelled out, so you can change any part of it.
#include <iostream>
#include <vector>

#include "framework/ember.h"
using namespace ember;

// Batches of (images scaled to [0, 1], labels).
data::Dataset batches(const datasets::Split& split, bool shuffle) {
  data::Dataset ds = data::Dataset::from_tensor_slices({split.x, split.y});
  if (shuffle) ds = ds.shuffle(10000, {.seed = 1});
  return ds.batch(64)
      .map([](const Tensor& x, const Tensor& y) { return data::Element{ops::cast(x, DType::Float32) / 255.0, y}; })
      .prefetch(data::AUTOTUNE);
}

int main() {
  random::set_seed(7);  // the same initial weights and shuffles on every run (tf.random.set_seed)
  auto [train, test] = datasets::fashion_mnist::load_data();
  data::Dataset train_ds = batches(train, /*shuffle=*/true), test_ds = batches(test, /*shuffle=*/false);

  Sequential model({
      layers::Input({28, 28}),
      layers::Flatten(),
      layers::Dense(128, {.activation = "relu"}),
      layers::Dense(10),
  });
  optimizers::Adam optimizer({.learning_rate = 1e-3});
  losses::SparseCategoricalCrossentropy loss_fn({.from_logits = true});
  metrics::Mean train_loss;
  metrics::SparseCategoricalAccuracy train_accuracy, test_accuracy;

  std::vector<double> epoch_losses;
  double accuracy_on_test = 0;
  for (int epoch = 1; epoch <= 3; ++epoch) {
    for (const data::Element& batch : train_ds) {
      const Tensor& x = batch[0];
      const Tensor& y = batch[1];
      // Everything computed from the model's weights while the tape lives is recorded...
      GradientTape tape;
      Tensor logits = model(x, /*training=*/true);
      Tensor loss = loss_fn(y, logits);
      // ...so that it can give the gradient of the loss with respect to each weight.
      std::vector<Variable> weights = model.trainable_weights();
      std::vector<Tensor> grads = tape.gradient(loss, weights);
      optimizer.apply(grads, weights);  // one Adam step on every weight
      train_loss.update_state(loss);
      train_accuracy.update_state(y, logits);
    }
    for (const data::Element& batch : test_ds) test_accuracy.update_state(batch[1], model(batch[0], false));

    epoch_losses.push_back(train_loss.result().item<float>());
    accuracy_on_test = test_accuracy.result().item<float>();
    std::cout << "epoch " << epoch << ": loss " << epoch_losses.back() << ", accuracy "
              << train_accuracy.result().item<float>() << ", test accuracy " << accuracy_on_test << "\n";
    for (metrics::Metric* m : std::vector<metrics::Metric*>{&train_loss, &train_accuracy, &test_accuracy})
      m->reset_state();  // metrics accumulate until reset: one value per epoch
  }

  bool ok = epoch_losses.back() < epoch_losses.front() && accuracy_on_test > 0.7;
  return ok ? 0 : 1;
}
