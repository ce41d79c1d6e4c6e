// Data-parallel training on several workers (TF: tf.distribute.MultiWorkerMirroredStrategy). Run it alone (a job
// of one worker) or as several: `mpirun -np 2 build/examples/multi_worker`. Each worker reads the same seeded
// pipeline; fit gives each its rows of every global batch, averages the gradients over the workers and logs
// the same metrics on all of them. Only the chief (worker 0) prints.
#include <cstdio>
#include <memory>
#include <vector>

#include "framework/ember.h"
using namespace ember;

int main() {
  distribute::MultiWorkerMirroredStrategy strategy;
  const distribute::ClusterResolver cluster = strategy.cluster_resolver();
  random::set_seed(7);

  auto [train, test] = datasets::fashion_mnist::load_data();
  auto pipeline = [](const datasets::Split& split, bool shuffle) {
    data::Dataset ds = data::Dataset::from_tensor_slices({split.x, split.y});
    if (shuffle) ds = ds.shuffle(10000, {.seed = 1});  // seeded: every worker shuffles alike
    return ds.batch(128)  // the global batch: each of n workers trains on 128 / n of its rows
        .map([](const Tensor& x, const Tensor& y) { return data::Element{ops::cast(x, DType::Float32) / 255.0, y}; });
  };

  std::unique_ptr<Sequential> model;
  {
    auto scope = strategy.scope();  // the weights made here start as the chief's on every worker
    model = std::make_unique<Sequential>(std::vector<SequentialEntry>{
        layers::Input({28, 28}), layers::Flatten(), layers::Dense(128, {.activation = "relu"}), layers::Dense(10)});
    model->compile({.optimizer = optimizers::Adam({.learning_rate = 1e-3}),
                    .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                    .metrics = {"accuracy"}});
  }
  History history = model->fit(pipeline(train, true), {.epochs = 3, .verbose = cluster.is_chief() ? 2 : 0});
  Logs scores = model->evaluate(pipeline(test, false), {.verbose = 0});

  if (cluster.is_chief())
    std::printf("%d worker(s), %d replica(s) in sync: test accuracy %.4f\n", cluster.num_workers,
                strategy.num_replicas_in_sync(), scores.at("accuracy"));
  // Every worker logged the same History; training on the slice still learns.
  return scores.at("accuracy") > 0.7 && history.history.at("loss").back() < history.history.at("loss").front() ? 0 : 1;
}
