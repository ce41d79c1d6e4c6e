// Control flow in graph mode (TF: tf.while_loop, tf.TensorArray): a recurrent network written as a loop,
// h = tanh(h W_hh + x[t] W_xh + b) over an image's 28 rows, inside a training step traced by ember::function.
// The loop stays a loop in the graph (one trace for every call), each step's h is kept in a TensorArray, and
// the tape differentiates through the loop.
#include <cstdint>
#include <iostream>
#include <vector>

#include "framework/ember.h"
using namespace ember;

constexpr int64_t kRows = 28, kUnits = 64, kClasses = 10;

data::Dataset batches(const datasets::Split& split) {
  return data::Dataset::from_tensor_slices({split.x, split.y})
      .shuffle(10000, {.seed = 1})
      .batch(64, {.drop_remainder = true})
      .map([](const Tensor& x, const Tensor& y) { return data::Element{ops::cast(x, DType::Float32) / 255.0, y}; });
}

int main() {
  auto [train, test] = datasets::fashion_mnist::load_data();
  random::set_seed(3);
  Variable w_xh(random::normal({kRows, kUnits}) * (1.0 / 28), {.name = "w_xh"});
  Variable w_hh(random::normal({kUnits, kUnits}) * (1.0 / 8), {.name = "w_hh"});
  Variable b_h(ops::zeros({kUnits}), {.name = "b_h"});
  Variable w_out(random::normal({2 * kUnits, kClasses}) * (1.0 / 8), {.name = "w_out"});
  Variable b_out(ops::zeros({kClasses}), {.name = "b_out"});
  std::vector<Variable> weights{w_xh, w_hh, b_h, w_out, b_out};
  optimizers::Adam optimizer({.learning_rate = 3e-3});
  losses::SparseCategoricalCrossentropy loss_fn({.from_logits = true});

  // The logits of a batch of images [batch, 28, 28], from the steps' h through a dense layer.
  auto logits_of = [&](const Tensor& images) {
    const int64_t batch = images.shape()[0];
    Tensor rows = ops::transpose(images, {1, 0, 2});  // [28, batch, 28]: row t of every image
    Tensor one = Tensor::scalar<int32_t>(1), steps = Tensor::scalar<int32_t>(static_cast<int32_t>(kRows));
    TensorArray states(DType::Float32, kRows, Shape{batch, kUnits});
    std::vector<Tensor> out = ops::while_loop(
        [&](const std::vector<Tensor>& v) { return ops::less(v[0], steps); },
        [&](const std::vector<Tensor>& v) -> std::vector<Tensor> {
          const Tensor& t = v[0];
          Tensor h = ops::tanh(ops::matmul(v[1], w_hh) + ops::matmul(ops::gather(rows, t), w_xh) + b_h);
          return {t + one, h, TensorArray(v[2]).write(t, h).stack()};
        },
        {Tensor::scalar<int32_t>(0), ops::zeros({batch, kUnits}), states.stack()});
    // The last step's h and the mean of all of them: [batch, 2 units].
    Tensor features = ops::concat({out[1], ops::reduce_mean(out[2], {0})}, 1);
    return ops::matmul(features, w_out) + b_out;
  };

  auto train_step = ember::function([&](const Tensor& x, const Tensor& y) {
    GradientTape tape;
    Tensor loss = loss_fn(y, logits_of(x));
    optimizer.apply(tape.gradient(loss, weights), weights);
    return loss;
  }, {.name = "rnn_train_step"});
  auto predict = ember::function([&](const Tensor& x) { return ops::argmax(logits_of(x), -1); });

  std::vector<double> epoch_losses;
  for (int epoch = 1; epoch <= 4; ++epoch) {
    double sum = 0;
    int steps = 0;
    for (const data::Element& batch : batches(train)) {
      sum += train_step(batch[0], batch[1]).item<float>();
      ++steps;
    }
    epoch_losses.push_back(sum / steps);
    std::cout << "epoch " << epoch << ": loss " << epoch_losses.back() << "\n";
  }
  int64_t right = 0, seen = 0;
  for (const data::Element& batch : batches(test)) {
    std::vector<int64_t> guess = predict(batch[0]).to_vector<int64_t>();
    std::vector<int64_t> truth = ops::cast(batch[1], DType::Int64).to_vector<int64_t>();
    for (size_t i = 0; i < guess.size(); ++i) right += guess[i] == truth[i];
    seen += static_cast<int64_t>(guess.size());
  }
  const double accuracy = static_cast<double>(right) / static_cast<double>(seen);
  std::cout << "test accuracy " << accuracy << "; the step was traced " << train_step.tracing_count()
            << " time(s)\n";
  // One while node in the traced step, its body a graph of its own.
  const graph::Graph& g = train_step.concrete_functions()[0]->graph();
  std::cout << "the step's graph holds " << g.count(graph::NodeKind::While) << " while node and "
            << g.count(graph::NodeKind::ControlFlowGrad) << " gradient node of it\n";

  const bool ok = epoch_losses.back() < epoch_losses.front() && train_step.tracing_count() == 1 && accuracy > 0.6 &&
                  g.count(graph::NodeKind::While) == 1;
  return ok ? 0 : 1;
}
