// Graph mode (TF: tf.function): the training step of examples/custom_train_step.cpp wrapped in
// ember::function. Its first call with a batch of a new shape traces the step into a graph (the forward pass,
// the gradient the tape computes, the optimizer's update) and later calls replay that graph. fit() does the
// same with its own steps unless compile is given .run_eagerly = true.
#include <iostream>
#include <sstream>
#include <vector>

#include "framework/ember.h"
using namespace ember;

data::Dataset batches(const datasets::Split& split) {
  return data::Dataset::from_tensor_slices({split.x, split.y})
      .shuffle(10000, {.seed = 1})
      .batch(64)
      .map([](const Tensor& x, const Tensor& y) { return data::Element{ops::cast(x, DType::Float32) / 255.0, y}; });
}

int main() {
  random::set_seed(7);  // the same initial weights and shuffles on every run (tf.random.set_seed)
  auto [train, test] = datasets::fashion_mnist::load_data();
  Sequential model({
      layers::Input({28, 28}),
      layers::Flatten(),
      layers::Dense(128, {.activation = "relu"}),
      layers::Dropout(0.2),  // a new mask on every call, traced or not
      layers::Dense(10),
  });
  optimizers::Adam optimizer({.learning_rate = 1e-3});
  losses::SparseCategoricalCrossentropy loss_fn({.from_logits = true});

  int traces = 0;
  auto train_step = ember::function([&](const Tensor& x, const Tensor& y) {
    ++traces;  // C++ code runs only while the step is traced...
    GradientTape tape;
    Tensor loss = loss_fn(y, model(x, /*training=*/true));
    std::vector<Variable> weights = model.trainable_weights();
    optimizer.apply(tape.gradient(loss, weights), weights);
    return loss;
  }, {.name = "train_step"});

  std::vector<double> epoch_losses;
  for (int epoch = 1; epoch <= 3; ++epoch) {
    double sum = 0;
    int steps = 0;
    for (const data::Element& batch : batches(train)) {
      sum += train_step(batch[0], batch[1]).item<float>();  // ...the ops run on every call
      ++steps;
    }
    epoch_losses.push_back(sum / steps);
    std::cout << "epoch " << epoch << ": loss " << epoch_losses.back() << "\n";
  }
  // Full batches of 64 and the smaller last batch: two signatures, two traces, however many steps ran.
  std::cout << "traces: " << train_step.tracing_count() << " (C++ body ran " << traces << " times)\n";

  // What was traced, one line per node; cf.graph().to_dot() gives the same as GraphViz.
  const ConcreteFunction& cf = train_step.get_concrete_function(TensorSpec({64, 28, 28}), TensorSpec({64}, DType::UInt8));
  std::ostringstream graph_text;
  graph_text << cf.graph();
  std::istringstream lines(graph_text.str());
  std::cout << "the traced step has " << cf.graph().nodes.size() << " nodes; its first lines:\n";
  std::string line;
  for (int i = 0; i < 8 && std::getline(lines, line); ++i) std::cout << line << "\n";
  std::cout << "  ...\n";

  // fit traces its steps the same way; run_eagerly runs them op by op, with the same numbers.
  model.compile({.optimizer = optimizers::Adam(), .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
  History history = model.fit(batches(train), {.epochs = 1, .verbose = 0});
  const double accuracy = model.evaluate(batches(test), {.verbose = 0}).at("accuracy");
  std::cout << "fit: loss " << history.history.at("loss").back() << ", test accuracy " << accuracy << "\n";

  const bool ok = epoch_losses.back() < epoch_losses.front() && train_step.tracing_count() == 2 && traces == 2 &&
                  accuracy > 0.7;
  return ok ? 0 : 1;
}
