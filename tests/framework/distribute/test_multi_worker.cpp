// MultiWorkerMirroredStrategy. The cases tagged [mpi] run as two workers under mpirun (tests/CMakeLists.txt
// registers them): each worker trains with the strategy and also trains a plain model on the whole global batch,
// and the two must agree. The others run as a single process, a job of one; those that start MPI have
// "MultiWorkerMirroredStrategy" in their names (the sanitizer build leaves them out: see the Makefile).
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <cstdlib>
#include <random>
#include <thread>

#include "framework/distribute/communicator.h"
#include "framework/distribute/strategy.h"
#include "framework/distribute/worker_files.h"
#include "framework/ember.h"
#include "tests/support/distribute_cases.h"

using namespace ember;
namespace fs = std::filesystem;
using distribute::MultiWorkerMirroredStrategy;
using distribute::ReduceOp;
using namespace ember::testing;
using Data = DistributeData;

namespace {

const MultiWorkerMirroredStrategy& strategy() {
  static const MultiWorkerMirroredStrategy s({.timeout_seconds = 120});
  return s;
}

int rank() { return strategy().cluster_resolver().task_id; }

// Every worker holds the same values: their mean over the workers is each worker's own, bit for bit.
void check_same_on_all_workers(const std::vector<double>& values) {
  std::vector<double> copy = values;
  Tensor t = Tensor::from_vector(copy);
  CHECK(strategy().reduce(ReduceOp::MEAN, t).to_vector<double>() == values);
}

History fit_reference(Sequential& m, const Data& d, FitOptions o) { return m.fit(d.x, d.y, std::move(o)); }

// With one replica, fit under the strategy is plain fit, bit for bit.
void check_same_as_plain_fit(const distribute::Strategy& s) {
  const Data d = mlp_data();
  const FitOptions options{.batch_size = 64, .epochs = 2, .verbose = 0, .shuffle = false};
  auto reference = mlp(1);
  compile_for_distribute(*reference, false);
  reference->fit(d.x, d.y, options);
  std::shared_ptr<Sequential> m;
  {
    auto scope = s.scope();
    CHECK(distribute::has_strategy());
    m = mlp(1);
    compile_for_distribute(*m, false);
  }
  CHECK_FALSE(distribute::has_strategy());
  m->fit(d.x, d.y, options);
  std::vector<Tensor> a = reference->get_weights(), b = m->get_weights();
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i].to_vector<float>() == b[i].to_vector<float>());
}

void check_fit_matches_one_worker(const std::function<std::shared_ptr<Sequential>(uint64_t)>& make, const Data& d,
                                  bool eager) {
  const FitOptions options{.batch_size = 64, .epochs = 2, .verbose = 0, .shuffle = false};
  auto reference = make(1);
  compile_for_distribute(*reference, eager);
  History h1 = fit_reference(*reference, d, options);

  std::shared_ptr<Sequential> m;
  {
    auto scope = strategy().scope();
    m = make(1 + 10 * static_cast<uint64_t>(rank()));  // other initial weights per worker: the chief's win
    compile_for_distribute(*m, eager);
  }
  History h2 = m->fit(d.x, d.y, options);
  check_close(m->get_weights(), reference->get_weights(), 1e-5);
  for (const auto& [name, values] : h1.history) {
    INFO(name);
    REQUIRE(h2.history.count(name));
    for (size_t e = 0; e < values.size(); ++e) CHECK(h2.history[name][e] == Approx(values[e]).epsilon(1e-5));
    check_same_on_all_workers(h2.history[name]);
  }
}

}  // namespace

TEST_CASE("distribute: MultiWorkerMirroredStrategy in a process started alone is a job of one", "[distribute]") {
  const auto& s = strategy();
  CHECK(s.num_replicas_in_sync() == 1);
  CHECK(s.cluster_resolver().is_chief());
  CHECK(s.cluster_resolver().num_workers == 1);
  Tensor v = Tensor::from_vector<float>({1, 2, 3});
  CHECK(s.reduce(ReduceOp::SUM, v).to_vector<float>() == std::vector<float>{1, 2, 3});
  CHECK(s.reduce(ReduceOp::MEAN, v).to_vector<float>() == std::vector<float>{1, 2, 3});
  CHECK(distribute::is_chief_worker());
  CHECK(distribute::write_filepath("/tmp/x/model.keras") == "/tmp/x/model.keras");
  check_same_as_plain_fit(s);
}

TEST_CASE("distribute: MultiWorkerMirroredStrategy names bad options", "[distribute]") {
  using distribute::CommunicationImplementation;
  // NCCL: Unimplemented in a build without it, FailedPrecondition without a GPU.
  if (device_count(DeviceType::CUDA) == 0)
    CHECK_THROWS_WITH(MultiWorkerMirroredStrategy({.communication = CommunicationImplementation::NCCL}),
                      Catch::Contains("communication NCCL"));
  CHECK_THROWS_WITH(MultiWorkerMirroredStrategy({.timeout_seconds = 0}), Catch::Contains("timeout_seconds must be positive"));
  CHECK_THROWS_WITH(MultiWorkerMirroredStrategy({.bytes_per_pack = -1}), Catch::Contains("bytes_per_pack"));
  CHECK_THROWS_WITH(strategy().reduce(ReduceOp::SUM, Tensor::from_vector<int32_t>({1})),
                    Catch::Contains("float32 or float64") && Catch::Contains("int32"));
}

TEST_CASE("distribute: MirroredStrategy on one device trains as that device alone", "[distribute]") {
  const distribute::MirroredStrategy s({.devices = {Device::cpu()}});
  CHECK(s.num_replicas_in_sync() == 1);
  CHECK(s.devices() == std::vector<Device>{Device::cpu()});
  check_same_as_plain_fit(s);
}

TEST_CASE("distribute: MirroredStrategy on one GPU, through NCCL, trains as the GPU alone", "[distribute][cuda]") {
  if (device_count(DeviceType::CUDA) == 0) {
    WARN("no CUDA device (device_count(DeviceType::CUDA) == 0): skipped");
    return;
  }
  DeviceScope on_gpu(Device::cuda(0));
  const distribute::MirroredStrategy s({.devices = {Device::cuda(0)}});
  CHECK(s.num_replicas_in_sync() == 1);
  // One rank's all-reduce is a copy: the values come back as they went.
  Tensor v = Tensor::from_vector<float>({1, 2, 3}, Device::cuda(0));
  Tensor r = s.reduce(ReduceOp::MEAN, v);
  CHECK(r.device() == Device::cuda(0));
  CHECK(r.to_vector<float>() == std::vector<float>{1, 2, 3});
  // fit's gradients go through NCCL; a copy changes no bit.
  check_same_as_plain_fit(s);
}

TEST_CASE("distribute: MultiWorkerMirroredStrategy reads EMBER_COLLECTIVE_TIMEOUT_SECONDS", "[distribute]") {
  ::setenv("EMBER_COLLECTIVE_TIMEOUT_SECONDS", "soon", 1);
  CHECK_THROWS_WITH(MultiWorkerMirroredStrategy(),
                    Catch::Contains("EMBER_COLLECTIVE_TIMEOUT_SECONDS must be a positive number") && Catch::Contains("soon"));
  ::setenv("EMBER_COLLECTIVE_TIMEOUT_SECONDS", "2.5", 1);
  CHECK_NOTHROW(MultiWorkerMirroredStrategy());
  ::unsetenv("EMBER_COLLECTIVE_TIMEOUT_SECONDS");
}

TEST_CASE("distribute: all_reduce packs tensors of both float dtypes and skips undefined ones", "[.][mpi]") {
  const MultiWorkerMirroredStrategy s({.bytes_per_pack = 16});  // several packs
  const float r = static_cast<float>(rank());
  std::vector<Tensor> values{Tensor::from_vector<float>({1 + r, 2, 3, 4, 5}), Tensor(),
                             Tensor::from_vector<double>({10.0 + r, 20.0}), Tensor::from_vector<float>({r, 1})};
  std::vector<Tensor> sum = s.all_reduce(ReduceOp::SUM, values);
  CHECK(sum[0].to_vector<float>() == std::vector<float>{3, 4, 6, 8, 10});
  CHECK_FALSE(sum[1].defined());
  CHECK(sum[2].to_vector<double>() == std::vector<double>{21, 40});
  CHECK(sum[3].to_vector<float>() == std::vector<float>{1, 2});
  std::vector<Tensor> mean = s.all_reduce(ReduceOp::MEAN, values);
  CHECK(mean[0].to_vector<float>() == std::vector<float>{1.5f, 2, 3, 4, 5});
  CHECK(mean[2].to_vector<double>() == std::vector<double>{10.5, 20});
  CHECK(mean[3].to_vector<float>() == std::vector<float>{0.5f, 1});
  CHECK(values[0].to_vector<float>() == std::vector<float>{1 + r, 2, 3, 4, 5});  // the inputs are left alone
}

TEST_CASE("distribute: all-reduces of several MiB, running at once, sum every element", "[.][mpi]") {
  // Odd counts of several MiB, both dtypes (the float one of 16 MiB and 28 bytes, run as pieces, the last one of 7
  // elements), and two all-reduces in flight together, waited for in the other order: every element is the exact
  // sum, on every worker.
  auto& comm = distribute::detail::Communicator::world();
  const double r = rank();
  const size_t n32 = (size_t{1} << 22) + 7, n64 = (size_t{1} << 17) + 3;
  std::vector<float> a(n32), sum32(n32);
  std::vector<double> b(n64), sum64(n64);
  for (size_t i = 0; i < n32; ++i) a[i] = static_cast<float>(i % 1000) + static_cast<float>(r) * 0.5f;
  for (size_t i = 0; i < n64; ++i) b[i] = static_cast<double>(i) * (1 + r);
  const uint64_t t32 = comm.start_all_reduce_sum(a.data(), sum32.data(), n32, DType::Float32, "test");
  const uint64_t t64 = comm.start_all_reduce_sum(b.data(), sum64.data(), n64, DType::Float64, "test");
  comm.wait(t64, 60, "test");
  comm.wait(t32, 60, "test");
  size_t wrong32 = 0, wrong64 = 0;
  for (size_t i = 0; i < n32; ++i) wrong32 += sum32[i] != 2 * static_cast<float>(i % 1000) + 0.5f;
  for (size_t i = 0; i < n64; ++i) wrong64 += sum64[i] != 3 * static_cast<double>(i);
  CHECK(wrong32 == 0);
  CHECK(wrong64 == 0);
  const std::vector<float> tail(sum32.end() - 3, sum32.end());
  CHECK(tail == std::vector<float>{2 * 1.0f * ((n32 - 3) % 1000) + 0.5f, 2 * 1.0f * ((n32 - 2) % 1000) + 0.5f,
                                   2 * 1.0f * ((n32 - 1) % 1000) + 0.5f});
  CHECK(a[5] == 5 + static_cast<float>(r) * 0.5f);  // the input is left alone
}

TEST_CASE("distribute: 2 workers at a global batch of 64 train the MLP as 1 worker does", "[.][mpi]") {
  REQUIRE(strategy().num_replicas_in_sync() == 2);
  const Data d = mlp_data();
  SECTION("traced steps") { check_fit_matches_one_worker(mlp, d, false); }
  SECTION("eager steps") { check_fit_matches_one_worker(mlp, d, true); }
}

TEST_CASE("distribute: gradients all-reduced during the backward pass train as after it, bit for bit", "[.][mpi]") {
  const Data d = mlp_data();
  auto train = [&](const distribute::MultiWorkerMirroredStrategyOptions& o, bool eager) {
    const MultiWorkerMirroredStrategy s(o);
    std::shared_ptr<Sequential> m;
    {
      auto scope = s.scope();
      m = mlp(1);
      compile_for_distribute(*m, eager);
    }
    m->fit(d.x, d.y, {.batch_size = 64, .epochs = 2, .verbose = 0, .shuffle = false});
    return m->get_weights();
  };
  auto check_same = [](const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) CHECK(a[i].to_vector<float>() == b[i].to_vector<float>());
  };
  for (const bool eager : {false, true}) {
    INFO((eager ? "eager steps" : "traced steps"));
    const auto after = train({.timeout_seconds = 120, .overlap_gradients = false}, eager);
    // One pack of the whole model (the default's first pack holds up to 1 MiB).
    check_same(train({.timeout_seconds = 120}, eager), after);
    // Packs of 256 bytes, last variables first: the last Dense's bias and kernel (204 bytes), the first's bias,
    // then its kernel (512 bytes) alone, larger than a pack.
    check_same(train({.timeout_seconds = 120, .bytes_per_pack = 256}, eager), after);
  }
}

TEST_CASE("distribute: fit outside a strategy runs no collective", "[.][mpi]") {
  // The chief trains a model of no strategy alone: a collective there would wait for the other worker, which
  // is already waiting in the sum below, and the job would time out.
  if (rank() == 0) {
    const Data d = mlp_data();
    auto m = mlp(1);
    compile_for_distribute(*m, false);
    m->fit(d.x, d.y, {.batch_size = 64, .epochs = 1, .verbose = 0});
    compile_for_distribute(*m, true);
    m->fit(d.x, d.y, {.batch_size = 64, .epochs = 1, .verbose = 0});
  }
  CHECK(strategy().reduce(ReduceOp::SUM, Tensor::scalar<float>(1)).item<float>() == 2);
}

TEST_CASE("distribute: 2 workers at a global batch of 64 train the CNN as 1 worker does", "[.][mpi]") {
  check_fit_matches_one_worker(cnn, cnn_data(), false);
}

TEST_CASE("distribute: validation, steps_per_execution and a shuffled Dataset under 2 workers", "[.][mpi]") {
  const Data d = mlp_data();
  auto make = [](uint64_t seed) {
    auto m = mlp(seed);
    m->compile({.optimizer = optimizers::Adam({.learning_rate = 0.01}),
                .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                .metrics = {"accuracy"},
                .steps_per_execution = 2});
    return m;
  };
  const auto ds = [&] { return data::Dataset::from_tensor_slices({d.x, d.y}).shuffle(256, {.seed = 3}).batch(64); };
  const auto val = data::Dataset::from_tensor_slices({d.x, d.y}).take(128).batch(32);
  const FitOptions options{.epochs = 2, .verbose = 0, .validation_data = val};
  auto reference = make(1);
  History h1 = reference->fit(ds(), options);
  std::shared_ptr<Sequential> m;
  {
    auto scope = strategy().scope();
    m = make(1 + 10 * static_cast<uint64_t>(rank()));
  }
  // Only the chief reads each batch's logs (as a progress bar on the chief alone would): every worker must still
  // sync the metrics after each step, or the job would hang.
  FitOptions with_hooks = options;
  std::vector<double> batch_losses;
  if (rank() == 0)
    with_hooks.callbacks = {std::make_shared<callbacks::LambdaCallback>(callbacks::LambdaCallbackOptions{
        .on_train_batch_end = [&](int64_t, const Logs& logs) { batch_losses.push_back(logs.at("loss")); }})};
  History h2 = m->fit(ds(), with_hooks);
  if (rank() == 0) {
    REQUIRE(batch_losses.size() == 4);  // 4 executions of 2 steps over 2 epochs
    CHECK(batch_losses.back() == h2.history.at("loss").back());
  }
  check_close(m->get_weights(), reference->get_weights(), 1e-5);
  REQUIRE(h2.history.count("val_loss"));
  for (const auto& [name, values] : h1.history) {
    INFO(name);
    for (size_t e = 0; e < values.size(); ++e) CHECK(h2.history[name][e] == Approx(values[e]).epsilon(1e-5));
    check_same_on_all_workers(h2.history[name]);
  }
}

TEST_CASE("distribute: evaluate averages the metrics over the workers' rows", "[.][mpi]") {
  const Data d = mlp_data();
  auto reference = mlp(1);
  compile_for_distribute(*reference, false);
  std::shared_ptr<Sequential> m;
  {
    auto scope = strategy().scope();
    m = mlp(1 + 10 * static_cast<uint64_t>(rank()));  // the chief's weights are evaluated
    compile_for_distribute(*m, false);
  }
  Logs a = reference->evaluate(d.x, d.y, {.batch_size = 64, .verbose = 0});
  Logs b = m->evaluate(d.x, d.y, {.batch_size = 64, .verbose = 0});
  for (const auto& [name, value] : a) CHECK(b.at(name) == Approx(value).epsilon(1e-6));
}

TEST_CASE("distribute: strategy.run custom loop over experimental_distribute_dataset", "[.][mpi]") {
  // TF's custom loop: the optimizer sums the workers' gradients, so each worker's loss is its share of the global
  // batch's: compute_average_loss (by default the worker's rows times the replicas), or a Loss's mean, which
  // strategy.run divides by the replicas. Both train as one worker on the global batch of 64.
  const Data d = mlp_data();
  const auto ds = data::Dataset::from_tensor_slices({d.x, d.y}).batch(64);
  const losses::SparseCategoricalCrossentropy per_example({.from_logits = true, .reduction = "none"});
  const losses::SparseCategoricalCrossentropy mean_loss({.from_logits = true});
  for (const bool average : {true, false}) {
    INFO((average ? "compute_average_loss" : "a Loss's mean"));
    auto step = [&](Sequential& m, optimizers::SGD& opt, const data::Element& batch) {
      std::vector<Variable> vars = m.trainable_weights();
      std::vector<Tensor> sources(vars.begin(), vars.end());
      std::vector<Tensor> grads;
      Tensor loss;
      {
        GradientTape tape;
        const Tensor logits = m(batch[0], true);
        loss = average ? distribute::compute_average_loss(per_example(batch[1], logits)) : mean_loss(batch[1], logits);
        grads = tape.gradient(loss, sources);
      }
      opt.apply(grads, vars);
      return loss;
    };
    auto reference = mlp(1);
    optimizers::SGD ref_opt({.learning_rate = 0.1});
    std::vector<float> ref_losses;
    for (const data::Element& b : ds) ref_losses.push_back(step(*reference, ref_opt, b).item<float>());

    std::shared_ptr<Sequential> m;
    const auto& s = strategy();
    {
      auto scope = s.scope();
      m = mlp(1 + 10 * static_cast<uint64_t>(rank()));
    }
    optimizers::SGD opt({.learning_rate = 0.1});
    std::vector<float> losses;
    for (const data::Element& b : s.experimental_distribute_dataset(ds)) {
      CHECK(b[0].shape()[0] == 32);
      const auto per_replica = s.run([&](const data::Element& batch) { return step(*m, opt, batch); }, b);
      losses.push_back(s.reduce(ReduceOp::SUM, per_replica).item<float>());  // the workers' shares: the loss
    }
    REQUIRE(losses.size() == 4);
    for (size_t i = 0; i < losses.size(); ++i) CHECK(losses[i] == Approx(ref_losses[i]).epsilon(1e-5));
    check_close(m->get_weights(), reference->get_weights(), 1e-5);
  }
}

TEST_CASE("distribute: a strategy.run step inside ember::function keeps the workers' variables mirrored", "[.][mpi]") {
  // TF's custom loop in a tf.function: the variables made in the scope are mirrored once, not on every call.
  const auto& s = strategy();
  const Tensor g = Tensor::from_vector<float>({static_cast<float>(rank() + 1), 10.0f * static_cast<float>(rank() + 1)});
  Variable var;
  std::shared_ptr<optimizers::SGD> opt;
  {
    auto scope = s.scope();
    var = Variable(Tensor::from_vector<float>({static_cast<float>(rank()), 0.0f}), {.name = "v"});  // the chief's wins
    opt = std::make_shared<optimizers::SGD>(optimizers::SGDOptions{.learning_rate = 1.0});
  }
  auto step = ember::function([&](const Tensor& t) {
    s.run([&](const Tensor& grad) { opt->apply({grad * 1.0f}, {var}); }, t);
    return var.value() * 1.0f;
  });
  for (int call = 1; call <= 3; ++call) {
    INFO("call " << call);
    // The workers' gradients summed: (1 + 2, 10 + 20) a step.
    CHECK(step(g).to_vector<float>() == std::vector<float>{-3.0f * static_cast<float>(call), -30.0f * static_cast<float>(call)});
  }
  CHECK(step.tracing_count() == 1);
}

TEST_CASE("distribute: BatchNormalization's moving statistics are the mean of the workers'", "[.][mpi]") {
  // Each worker normalises its rows by their own statistics (TF's BatchNormalization under the strategy); the
  // moving statistics the forward pass assigns are averaged, so every worker holds (and saves, and predicts
  // with) the same. With a learning rate of 0 the moving mean is one worker's at the global batch.
  const Data d = mlp_data();
  auto make = [](uint64_t seed) {
    backend::clear_session();
    random::set_seed(seed);
    auto m = std::make_shared<Sequential>(std::vector<SequentialEntry>{
        layers::Input({8}), layers::Dense(16), layers::BatchNormalization(), layers::Dense(3)});
    m->compile({.optimizer = optimizers::SGD({.learning_rate = 0.0}),
                .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
    return m;
  };
  for (const bool eager : {false, true}) {
    INFO("run_eagerly " << eager);
    const FitOptions options{.batch_size = 64, .epochs = 2, .verbose = 0, .shuffle = false};
    auto reference = make(1);
    reference->fit(d.x, d.y, options);
    std::shared_ptr<Sequential> m;
    {
      auto scope = strategy().scope();
      m = make(1 + 10 * static_cast<uint64_t>(rank()));
      m->compile({.optimizer = optimizers::SGD({.learning_rate = 0.0}),
                  .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                  .run_eagerly = eager});
    }
    m->fit(d.x, d.y, options);
    const std::vector<Variable> stats = m->non_trainable_weights();
    REQUIRE(stats.size() == 2);
    for (const Variable& v : stats) {
      const std::vector<float> f = v.value().to_vector<float>();
      check_same_on_all_workers(std::vector<double>(f.begin(), f.end()));
    }
    check_close({stats[0].value()}, {reference->non_trainable_weights()[0].value()}, 1e-5);
    const std::vector<float> p = m->predict(d.x, {.batch_size = 64, .verbose = 0}).to_vector<float>();
    check_same_on_all_workers(std::vector<double>(p.begin(), p.end()));
  }
}

TEST_CASE("distribute: evaluate builds a model without Input on the first batch and evaluates the chief's weights",
          "[.][mpi]") {
  const Data d = mlp_data();
  auto make = [](uint64_t seed) {
    backend::clear_session();
    random::set_seed(seed);
    auto m = std::make_shared<Sequential>(std::vector<SequentialEntry>{layers::Dense(16, {.activation = "relu"}), layers::Dense(3)});
    compile_for_distribute(*m, false);
    return m;
  };
  std::shared_ptr<Sequential> m;
  {
    auto scope = strategy().scope();
    m = make(1 + 10 * static_cast<uint64_t>(rank()));
  }
  const Logs logs = m->evaluate(d.x, d.y, {.batch_size = 64, .verbose = 0});
  check_same_on_all_workers({logs.at("loss")});
  for (const Tensor& w : m->get_weights()) {
    const std::vector<float> f = w.to_vector<float>();
    check_same_on_all_workers(std::vector<double>(f.begin(), f.end()));
  }
  // The loss is the chief's weights' on all the rows.
  auto chief = make(1);
  chief->predict(d.x, {.batch_size = 64, .verbose = 0});  // builds it
  chief->set_weights(m->get_weights());
  CHECK(logs.at("loss") == Approx(chief->evaluate(d.x, d.y, {.batch_size = 64, .verbose = 0}).at("loss")).epsilon(1e-6));
}

TEST_CASE("distribute: a dynamic LossScaleOptimizer sums the workers' scaled gradients; an overflow on one worker "
          "skips the step on both", "[.][mpi]") {
  check_loss_scaled_loop_matches_one_replica(strategy());
}

TEST_CASE("distribute: a subclassed model's own train_step under fit runs in each worker's replica context",
          "[.][mpi]") {
  for (const bool eager : {false, true}) {
    INFO("run_eagerly " << eager);
    check_own_train_step_fit_matches_one_replica(strategy(), eager);
  }
}

TEST_CASE("distribute: a subclassed model's own test_step under evaluate and fit's validation runs in each worker's "
          "replica context", "[.][mpi]") {
  for (const bool eager : {false, true}) {
    INFO("run_eagerly " << eager);
    check_own_test_step_matches_one_replica(strategy(), eager);
  }
}

TEST_CASE("distribute: only the chief writes ModelCheckpoint files", "[.][mpi]") {
  // One directory for the job: the chief's random number, shared through an all-reduce.
  const double tag = strategy().reduce(ReduceOp::SUM, Tensor::scalar<double>(rank() == 0 ? std::random_device{}() : 0)).item<double>();
  const fs::path dir = fs::temp_directory_path() / ("ember_mwms_ckpt_" + std::to_string(static_cast<uint64_t>(tag)));
  const Data d = mlp_data();
  std::shared_ptr<Sequential> m;
  {
    auto scope = strategy().scope();
    m = mlp(1);
    compile_for_distribute(*m, false);
  }
  m->fit(d.x, d.y,
         {.batch_size = 64, .epochs = 2, .verbose = 0,
          .callbacks = {callbacks::ModelCheckpoint((dir / "ckpt_{epoch}.weights.h5").string(), {.save_weights_only = true})}});
  strategy().reduce(ReduceOp::SUM, Tensor::scalar<float>(0));  // both workers have finished writing
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"ckpt_1.weights.h5", "ckpt_2.weights.h5"});
  strategy().reduce(ReduceOp::SUM, Tensor::scalar<float>(0));
  if (rank() == 0) fs::remove_all(dir);
}

TEST_CASE("distribute: BackupAndRestore resumes a 2-worker fit", "[.][mpi]") {
  const double tag = strategy().reduce(ReduceOp::SUM, Tensor::scalar<double>(rank() == 0 ? std::random_device{}() : 0)).item<double>();
  const fs::path dir = fs::temp_directory_path() / ("ember_mwms_backup_" + std::to_string(static_cast<uint64_t>(tag)));
  const Data d = mlp_data();
  auto make = [&] {
    std::shared_ptr<Sequential> m;
    auto scope = strategy().scope();
    m = mlp(1);
    compile_for_distribute(*m, false);
    return m;
  };
  const FitOptions base{.batch_size = 64, .epochs = 4, .verbose = 0, .shuffle = true};
  auto full = make();
  random::set_seed(100);
  full->fit(d.x, d.y, base);

  // Both workers stop after two epochs (the job is killed); a restarted job resumes from the chief's backup.
  auto first = make();
  random::set_seed(100);
  FitOptions o = base;
  o.epochs = 2;
  o.callbacks = {callbacks::BackupAndRestore(dir.string(), {.delete_checkpoint = false})};
  first->fit(d.x, d.y, o);
  CHECK(fs::exists(dir / "latest.weights.h5"));
  strategy().reduce(ReduceOp::SUM, Tensor::scalar<float>(0));

  auto resumed = make();
  random::set_seed(999);
  o = base;
  o.callbacks = {callbacks::BackupAndRestore(dir.string())};
  History h = resumed->fit(d.x, d.y, o);
  CHECK(h.epoch == std::vector<int>{2, 3});
  check_close(resumed->get_weights(), full->get_weights(), 1e-6);
  strategy().reduce(ReduceOp::SUM, Tensor::scalar<float>(0));
  if (rank() == 0) fs::remove_all(dir);
}

TEST_CASE("distribute: workers that build different models are told which variable differs", "[.][mpi]") {
  const Data d = mlp_data();
  std::shared_ptr<Sequential> m;
  {
    auto scope = strategy().scope();
    backend::clear_session();
    m = std::make_shared<Sequential>(std::vector<SequentialEntry>{
        layers::Input({8}), layers::Dense(rank() == 0 ? 16 : 17, {.activation = "relu"}), layers::Dense(3)});
    compile_for_distribute(*m, false);
  }
  CHECK_THROWS_WITH(m->fit(d.x, d.y, {.batch_size = 64, .verbose = 0}),
                    Catch::Contains("different variables") && Catch::Contains("first difference is variable 0") &&
                        Catch::Contains("(8, 16)") && Catch::Contains("(8, 17)"));
}

TEST_CASE("distribute: a global batch the workers cannot split evenly is refused", "[.][mpi]") {
  const Data d = mlp_data();
  std::shared_ptr<Sequential> m;
  {
    auto scope = strategy().scope();
    m = mlp(1);
    compile_for_distribute(*m, false);
  }
  CHECK_THROWS_WITH(m->fit(d.x, d.y, {.batch_size = 63, .verbose = 0}),
                    Catch::Contains("global batch of 63 samples cannot be split evenly across 2 replicas") &&
                        Catch::Contains("multiple of 2"));
}

// Run alone (its own ctest entry): worker 1 raises in the middle of fit; worker 0 must end with DeadlineExceeded
// within the timeout and print the marker the test looks for. The job then ends (its communicator is broken).
TEST_CASE("distribute: a worker that raises mid-fit fails the other within the timeout", "[.][mpi_failure]") {
  const MultiWorkerMirroredStrategy s({.timeout_seconds = 3});
  REQUIRE(s.num_replicas_in_sync() == 2);
  const Data d = mlp_data();
  std::shared_ptr<Sequential> m;
  {
    auto scope = s.scope();
    m = mlp(1);
    compile_for_distribute(*m, false);
  }
  const bool raiser = s.cluster_resolver().task_id == 1;
  auto fail = std::make_shared<callbacks::LambdaCallback>(callbacks::LambdaCallbackOptions{.on_train_batch_begin = [&](int64_t batch, const Logs&) {
    if (raiser && batch == 2) throw std::runtime_error("worker 1 fails on purpose");
  }});
  const auto start = std::chrono::steady_clock::now();
  if (raiser) {
    CHECK_THROWS_WITH(m->fit(d.x, d.y, {.batch_size = 64, .verbose = 0, .callbacks = {fail}}),
                      Catch::Contains("on purpose"));
    return;
  }
  try {
    m->fit(d.x, d.y, {.batch_size = 64, .verbose = 0, .callbacks = {fail}});
    FAIL("fit returned although worker 1 stopped");
  } catch (const DeadlineExceeded& e) {
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string message = e.what();
    const bool named = message.find("all-reduce") != std::string::npos &&
                       message.find("did not complete within 3 s") != std::string::npos &&
                       message.find("EMBER_COLLECTIVE_TIMEOUT_SECONDS") != std::string::npos;
    CHECK(named);
    std::printf("worker 0 got DeadlineExceeded after %.1f s: %s\n", waited, e.what());
    if (named) std::printf("EMBER_MPI_FAILURE_DETECTED\n");
    std::fflush(stdout);
  }
}

// Run alone (its own ctest entry): worker 1 fails inside the backward pass of an eager step, after the all-reduce
// of the last layer's gradients has started and before the first layer's; worker 0 must end with
// DeadlineExceeded as above.
TEST_CASE("distribute: a worker that fails during an overlapped step fails the other within the timeout",
          "[.][mpi_failure_overlap]") {
  const MultiWorkerMirroredStrategy s({.timeout_seconds = 3, .bytes_per_pack = 64});
  REQUIRE(s.num_replicas_in_sync() == 2);
  const bool raiser = s.cluster_resolver().task_id == 1;
  int backward_calls = 0;
  auto fail_in_backward = [&](const Tensor& x) {
    return custom_gradient(x, [](const Tensor& v) { return v; }, [&](const Tensor& dy) {
      if (raiser && ++backward_calls == 3) throw std::runtime_error("worker 1 fails on purpose");
      return dy;
    });
  };
  const Data d = mlp_data();
  std::shared_ptr<Sequential> m;
  {
    auto scope = s.scope();
    backend::clear_session();
    random::set_seed(1);
    m = std::make_shared<Sequential>(std::vector<SequentialEntry>{
        layers::Input({8}), layers::Dense(16, {.activation = "relu"}), layers::Lambda(fail_in_backward),
        layers::Dense(3)});
    compile_for_distribute(*m, /*eager=*/true);
  }
  const auto start = std::chrono::steady_clock::now();
  if (raiser) {
    CHECK_THROWS_WITH(m->fit(d.x, d.y, {.batch_size = 64, .verbose = 0}), Catch::Contains("on purpose"));
    // This worker left all-reduces running, so its exit ends the job (MPI_Abort): it lingers until worker 0 has
    // reported.
    std::this_thread::sleep_for(std::chrono::seconds(8));
    return;
  }
  try {
    m->fit(d.x, d.y, {.batch_size = 64, .verbose = 0});
    FAIL("fit returned although worker 1 stopped");
  } catch (const DeadlineExceeded& e) {
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string message = e.what();
    const bool named = message.find("all-reduce of the gradients") != std::string::npos &&
                       message.find("did not complete within 3 s") != std::string::npos;
    CHECK(named);
    std::printf("worker 0 got DeadlineExceeded after %.1f s: %s\n", waited, e.what());
    if (named) std::printf("EMBER_MPI_FAILURE_DETECTED\n");
    std::fflush(stdout);
  }
}
