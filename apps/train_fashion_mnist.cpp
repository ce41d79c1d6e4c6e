// train_fashion_mnist: trains a Keras-style model on Fashion-MNIST (what `make train` runs) and prints
// the model summary, Keras progress bars and, as its last line,
// `test_accuracy=<0..1> test_loss=<x> seconds_per_epoch=<s>`.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "apps/fashion_mnist.h"
#include "apps/tensorboard_flags.h"
#include "framework/ember.h"

using namespace ember;
using fashion_mnist::make_model;
using fashion_mnist::pipeline;

namespace {

struct Flags {
  std::string model = "mlp";
  int epochs = 5;
  int64_t batch_size = 128;
  double lr = 1e-3;
  std::string optimizer = "adam";
  std::string precision = "float32";
  std::string device = device_count(DeviceType::CUDA) > 0 ? "gpu" : "cpu";  // TF's placement: a GPU when present
  uint64_t seed = 42;
  apps::TensorBoardFlags tensorboard;
  std::string checkpoint;
  bool resume = false;
  int threads = 0;
  int verbose = 1;
  bool run_eagerly = false;
  int steps_per_execution = 1;
  std::string strategy = "none";
};

// Wall time of each epoch, for seconds_per_epoch.
struct EpochTimer : callbacks::Callback {
  EMBER_CALLBACK(EpochTimer)
  std::chrono::steady_clock::time_point start;
  double total = 0;
  int epochs = 0;
  void on_epoch_begin(int, const Logs&) override { start = std::chrono::steady_clock::now(); }
  void on_epoch_end(int, Logs&) override {
    total += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ++epochs;
  }
};

int run(const Flags& f) {
  if (f.threads > 0) config::set_intra_op_parallelism_threads(f.threads);
  random::set_seed(f.seed);
  mixed_precision::set_global_policy(f.precision);
  DeviceScope on_device(f.device == "gpu" ? Device::cuda(0) : Device::cpu());

  // --strategy: the model and its optimizer are made in the strategy's scope; fit then splits each batch of
  // --batch-size (the global batch) across the replicas. Every worker reads the same seeded pipeline.
  std::optional<distribute::Strategy> strategy;
  if (f.strategy == "mirrored")
    strategy = distribute::MirroredStrategy({.devices = {f.device == "gpu" ? Device::cuda(0) : Device::cpu()}});
  else if (f.strategy == "multi_worker")
    strategy = distribute::MultiWorkerMirroredStrategy();
  const bool chief = !strategy || strategy->cluster_resolver().is_chief();
  const int verbose = chief ? f.verbose : 0;  // the workers log the same numbers: the chief alone prints them

  auto [train, test] = datasets::fashion_mnist::load_data();
  const Shape image_shape = fashion_mnist::image_shape(f.model);
  std::unique_ptr<Sequential> model;
  {
    std::optional<distribute::StrategyScope> scope;
    if (strategy) scope.emplace(strategy->scope());
    model = make_model(f.model);
    optimizers::OptimizerPtr optimizer = optimizers::get(f.optimizer);
    optimizer->set_learning_rate(f.lr);
    model->compile({.optimizer = optimizer,
                    .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                    .metrics = {"accuracy"},
                    .run_eagerly = f.run_eagerly,
                    .steps_per_execution = f.steps_per_execution});
  }
  if (chief) model->summary();
  if (strategy && chief)
    std::printf("strategy: %s, %d replica(s) in sync, global batch %lld\n", f.strategy.c_str(),
                strategy->num_replicas_in_sync(), static_cast<long long>(f.batch_size));

  auto timer = std::make_shared<EpochTimer>();
  std::vector<callbacks::CallbackArg> cbs = {timer};
  apps::add_tensorboard_callback(f.tensorboard, cbs);
  if (!f.checkpoint.empty()) {
    // The model after every epoch (loadable by models::load_model and by Python Keras), and the training
    // state (optimizer, epoch, random generator) beside it for --resume.
    const std::string backup_dir = f.checkpoint + ".train_state";
    if (!f.resume && chief) std::filesystem::remove_all(backup_dir);
    else if (!std::filesystem::exists(backup_dir) && chief)
      std::cerr << "train_fashion_mnist: nothing to resume in " << backup_dir << "; starting from epoch 1\n";
    // The other workers restore from the chief's directory: they wait here until the chief has cleared it.
    if (strategy) strategy->reduce(distribute::ReduceOp::MEAN, Tensor::scalar<float>(0));
    cbs.push_back(callbacks::ModelCheckpoint(f.checkpoint, {.verbose = verbose > 0 ? 1 : 0}));
    cbs.push_back(callbacks::BackupAndRestore(backup_dir, {.delete_checkpoint = false}));
  }
  auto train_ds = pipeline(train, image_shape, f.batch_size, true, f.seed);
  auto test_ds = pipeline(test, image_shape, f.batch_size, false, f.seed);
  model->fit(train_ds, {.epochs = f.epochs, .verbose = verbose, .callbacks = cbs, .validation_data = test_ds});

  Logs scores = model->evaluate(test_ds, {.verbose = 0});
  if (!chief) return 0;
  std::printf("test_accuracy=%.4f test_loss=%.4f seconds_per_epoch=%.3f\n", scores.at("accuracy"), scores.at("loss"),
              timer->epochs ? timer->total / timer->epochs : 0.0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Trains a Keras-style model on Fashion-MNIST with Ember."};
  Flags f;
  app.add_option("--model", f.model,
                 "mlp (784-256-256-10), cnn (the Keras example CNN), seed_cnn or lstm (LSTM(128) over the image's 28 rows)")
      ->check(CLI::IsMember({"mlp", "cnn", "seed_cnn", "lstm"}))
      ->capture_default_str();
  app.add_option("--epochs", f.epochs, "Training epochs")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--batch-size", f.batch_size, "Batch size")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--lr", f.lr, "Learning rate")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--optimizer", f.optimizer, "Keras optimizer name (adam, sgd, rmsprop, adamw, ...)")->capture_default_str();
  app.add_option("--precision", f.precision, "Dtype policy")
      ->check(CLI::IsMember({"float32", "mixed_float16", "mixed_bfloat16"}))
      ->capture_default_str();
  app.add_option("--device", f.device, "cpu or gpu (default: gpu when one is visible)")->check(CLI::IsMember({"cpu", "gpu"}))->capture_default_str();
  app.add_option("--seed", f.seed, "Seed of weights, shuffling and dropout")->capture_default_str();
  apps::add_tensorboard_flags(app, f.tensorboard);
  app.add_option("--checkpoint", f.checkpoint,
                 "Save the model here after every epoch (.keras or .h5), and the training state in PATH.train_state/");
  app.add_flag("--resume", f.resume, "Continue from the training state of --checkpoint (the last finished epoch)")
      ->needs("--checkpoint");
  app.add_option("--threads", f.threads, "Intra-op threads (0: all cores)")->capture_default_str();
  app.add_flag("--run-eagerly", f.run_eagerly, "Run the training steps op by op instead of as traced functions");
  app.add_option("--steps-per-execution", f.steps_per_execution, "Batches per call of the traced step (compile's)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--strategy", f.strategy,
                 "none; mirrored (this process's device); multi_worker (one worker per process: "
                 "mpirun -np N train_fashion_mnist --strategy multi_worker; --batch-size is the global batch)")
      ->check(CLI::IsMember({"none", "mirrored", "multi_worker"}))
      ->capture_default_str();
  app.add_option("--verbose", f.verbose, "0 silent, 1 progress bar, 2 one line per epoch")
      ->check(CLI::Range(0, 2))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    return run(f);
  } catch (const Error& e) {
    std::cerr << "train_fashion_mnist: " << e.what() << "\n";
    return 1;
  }
}
