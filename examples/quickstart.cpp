// Quick start: define, train, evaluate and save a Fashion-MNIST classifier.
#include <iostream>

#include "framework/ember.h"
using namespace ember;

int main() {
  // 60,000 training and 10,000 test images (uint8, 28x28) with labels 0..9.
  auto [train, test] = datasets::fashion_mnist::load_data();
  Tensor x_train = ops::cast(train.x, DType::Float32) / 255.0;  // pixels scaled to [0, 1]
  Tensor x_test = ops::cast(test.x, DType::Float32) / 255.0;

  Sequential model({
      layers::Input({28, 28}),
      layers::Flatten(),
      layers::Dense(128, {.activation = "relu"}),
      layers::Dropout(0.2),
      layers::Dense(10),  // one score (logit) per class
  });
  model.summary();
  model.compile({
      .optimizer = "adam",
      .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
      .metrics = {"accuracy"},
  });
  model.fit(x_train, train.y, {.epochs = 5});
  Logs scores = model.evaluate(x_test, test.y, {.verbose = 2});
  std::cout << "test accuracy: " << scores.at("accuracy") << "\n";
  model.save("fashion_mnist.keras");  // loadable with models::load_model, or by Python Keras
}
