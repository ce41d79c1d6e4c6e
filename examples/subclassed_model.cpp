// A subclassed model (Keras: class MyModel(keras.Model)): the layers are members, call() wires them
// with any C++ you like. Here a residual connection, which a Sequential cannot express.
#include <iostream>

#include "framework/ember.h"
using namespace ember;

struct ResidualMLP : Model {
  ResidualMLP() : Model({.name = "residual_mlp"}) {}

  // Layers used in call() are tracked automatically: their weights become the model's.
  layers::Flatten flatten;
  layers::Dense stem{128, {.activation = "relu"}};
  layers::Dense block1{128, {.activation = "relu"}};
  layers::Dense block2{128};
  layers::Dropout dropout{0.2};
  layers::Dense classifier{10};

  // training is true inside fit (Dropout drops) and false in evaluate/predict (it does not).
  Tensor call(const Tensor& x, bool training) override {
    Tensor h = stem(flatten(x));
    h = ops::relu(h + block2(block1(h)));  // the residual connection
    return classifier(dropout(h, training));
  }
};

int main() {
  random::set_seed(7);  // the same initial weights and shuffles on every run (tf.random.set_seed)
  auto [train, test] = datasets::fashion_mnist::load_data();
  Tensor x_train = ops::cast(train.x, DType::Float32) / 255.0;
  Tensor x_test = ops::cast(test.x, DType::Float32) / 255.0;

  ResidualMLP model;
  model.compile({
      .optimizer = "adam",
      .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
      .metrics = {"accuracy"},
  });
  model.fit(x_train, train.y, {.batch_size = 64, .epochs = 3, .validation_split = 0.1});

  // The weights exist once the model has seen data: 4 Dense layers with a kernel and a bias each.
  std::cout << model.trainable_weights().size() << " trainable weights, " << model.count_params()
            << " parameters\n";
  model.summary();
  double accuracy = model.evaluate(x_test, test.y, {.verbose = 0}).at("accuracy");
  std::cout << "test accuracy: " << accuracy << "\n";

  // A subclassed model's architecture is C++ code, so it saves its weights (model.save_weights) but not
  // itself as a .keras file; use a functional model for that.
  bool ok = model.trainable_weights().size() == 8 && accuracy > 0.7;
  return ok ? 0 : 1;
}
