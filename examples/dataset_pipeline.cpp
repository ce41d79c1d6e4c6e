// Input pipelines with data::Dataset (TF: tf.data.Dataset): build one from tensors, shuffle, batch,
// map and prefetch it, iterate over it by hand, then train a model from it.
#include <cstdint>
#include <iostream>
#include <vector>

#include "framework/ember.h"
using namespace ember;

int main() {
  random::set_seed(7);  // the same initial weights and shuffles on every run (tf.random.set_seed)
  // A small pipeline whose output is easy to check: the even numbers below 10, squared, in pairs.
  data::Dataset squares = data::Dataset::range(10)  // int64 scalars 0, 1, ..., 9
                              .filter([](const Tensor& i) { return i.item<int64_t>() % 2 == 0; })
                              .map([](const Tensor& i) { return i * i; })
                              .batch(2);  // [0, 4], [16, 36], [64]
  std::vector<int64_t> values;
  for (const data::Element& batch : squares) {  // each range-for is a fresh pass
    std::cout << "batch: " << batch[0] << "\n";
    for (int64_t v : batch[0].to_vector<int64_t>()) values.push_back(v);
  }

  // 1000 samples with two features; the label says whether the features sum to more than 0.
  Tensor x = random::normal({1000, 2}, {.seed = 1});
  Tensor y = ops::cast(ops::greater(ops::reduce_sum(x, {1}, /*keepdims=*/true), ops::zeros({1000, 1})), DType::Float32);

  data::Dataset ds = data::Dataset::from_tensor_slices({x, y})  // element i is (x[i], y[i])
                         .shuffle(1000, {.seed = 42})           // a new order on every pass (epoch)
                         .batch(64)                             // x [64, 2], y [64, 1]; the last has 40
                         .map([](const Tensor& x, const Tensor& y) { return data::Element{x * 2.0, y}; },
                              {.num_parallel_calls = data::AUTOTUNE})  // on worker threads, order kept
                         .prefetch(data::AUTOTUNE);             // makes batches ahead of the consumer
  std::cout << "batches per pass: " << ds.cardinality() << "\n";

  int64_t samples = 0, batches = 0;
  double positives = 0;
  for (const data::Element& batch : ds) {
    samples += batch[0].shape()[0];
    positives += ops::reduce_sum(batch[1]).item<float>();
    ++batches;
  }
  std::cout << "one pass: " << batches << " batches, " << samples << " samples, " << positives << " positive\n";

  // fit takes the dataset as it is: every element is one batch of (inputs, targets).
  Sequential model({layers::Input({2}), layers::Dense(1, {.activation = "sigmoid"})});
  model.compile({.optimizer = optimizers::Adam({.learning_rate = 0.05}),
                 .loss = "binary_crossentropy",
                 .metrics = {"accuracy"}});
  model.fit(ds, {.epochs = 5, .verbose = 2});
  double accuracy = model.evaluate(ds, {.verbose = 0}).at("accuracy");
  std::cout << "accuracy: " << accuracy << "\n";

  bool ok = values == std::vector<int64_t>{0, 4, 16, 36, 64} && batches == 16 && samples == 1000 &&
            positives == ops::reduce_sum(y).item<float>() && accuracy > 0.95;
  std::cout << (ok ? "pipeline as expected\n" : "unexpected pipeline output\n");
  return ok ? 0 : 1;
}
