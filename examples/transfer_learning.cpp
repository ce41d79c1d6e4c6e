// Transfer learning (Keras guide: "Transfer learning & fine-tuning"): reuse the layers a model learnt on
// one task for another, freezing them while a new head trains on little data, then fine-tune.
// Here the "pretrained" base comes from training on all ten Fashion-MNIST classes; the new task is
// telling footwear (sandals, sneakers, ankle boots) from everything else, from 1,000 images only.
#include <iostream>
#include <memory>

#include "framework/ember.h"
using namespace ember;

// 1 for footwear (classes 5, 7, 9), else 0, as a column [N, 1] like the model's output.
Tensor is_footwear(const Tensor& labels) {
  std::vector<float> out;
  for (uint8_t c : labels.to_vector<uint8_t>()) out.push_back(c == 5 || c == 7 || c == 9 ? 1.0f : 0.0f);
  return Tensor::from_vector<float>(out, {static_cast<int64_t>(out.size()), 1});
}

int main() {
  random::set_seed(7);  // the same initial weights and shuffles on every run (tf.random.set_seed)
  auto [train, test] = datasets::fashion_mnist::load_data();
  Tensor x_train = ops::cast(train.x, DType::Float32) / 255.0, x_test = ops::cast(test.x, DType::Float32) / 255.0;

  // The base: held by a shared_ptr so that several functional models can call it.
  auto base = std::make_shared<Sequential>(
      std::vector<SequentialEntry>{layers::Input({28, 28}), layers::Flatten(),
                                   layers::Dense(128, {.activation = "relu"}), layers::Dense(64, {.activation = "relu"})},
      ModelOptions{.name = "base"});

  // 1. Pretraining (in practice: load weights someone else trained, e.g. base->load_weights(...)).
  Tensor inputs = layers::Input({28, 28});
  Model classifier(inputs, layers::Dense(10)((*base)(inputs)));
  classifier.compile({.optimizer = "adam",
                      .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                      .metrics = {"accuracy"}});
  classifier.fit(x_train, train.y, {.batch_size = 64, .epochs = 2, .verbose = 2});

  // 2. Freeze the base and put a new head on it. Its weights no longer train (nor count as trainable).
  base->set_trainable(false);
  Tensor new_inputs = layers::Input({28, 28});
  Model footwear(new_inputs, layers::Dense(1, {.activation = "sigmoid"})((*base)(new_inputs)));
  footwear.summary();  // the base's parameters show as non-trainable
  std::vector<Tensor> base_before = base->get_weights();

  Tensor few_images = ops::slice(x_train, {0, 0, 0}, {1000, 28, 28});
  Tensor few_labels = is_footwear(ops::slice(train.y, {0}, {1000}));
  footwear.compile({.optimizer = "adam", .loss = "binary_crossentropy", .metrics = {"accuracy"}});
  footwear.fit(few_images, few_labels, {.epochs = 5, .verbose = 2});
  double frozen_accuracy = footwear.evaluate(x_test, is_footwear(test.y), {.verbose = 0}).at("accuracy");
  std::cout << "footwear test accuracy with the base frozen: " << frozen_accuracy << "\n";

  bool base_unchanged = true;
  std::vector<Tensor> base_after = base->get_weights();
  for (size_t i = 0; i < base_after.size(); ++i)
    base_unchanged &= ops::reduce_all(ops::equal(base_before[i], base_after[i])).item<bool>();
  std::cout << "base weights unchanged: " << (base_unchanged ? "yes" : "no") << "\n";

  // 3. Fine-tuning: unfreeze and compile again (as Keras asks after changing `trainable`), with a small
  // learning rate so that the pretrained weights move only a little.
  base->set_trainable(true);
  footwear.compile(
      {.optimizer = optimizers::Adam({.learning_rate = 1e-5}), .loss = "binary_crossentropy", .metrics = {"accuracy"}});
  footwear.fit(few_images, few_labels, {.epochs = 2, .verbose = 2});
  double tuned_accuracy = footwear.evaluate(x_test, is_footwear(test.y), {.verbose = 0}).at("accuracy");
  std::cout << "after fine-tuning: " << tuned_accuracy << " with " << footwear.trainable_weights().size()
            << " trainable weights\n";

  bool ok = base_unchanged && frozen_accuracy > 0.85 && tuned_accuracy > 0.85 && footwear.trainable_weights().size() == 6;
  return ok ? 0 : 1;
}
