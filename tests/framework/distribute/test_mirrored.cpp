// MirroredStrategy with several replicas in one process. Two (or three) replicas on the CPU, each computing the
// gradients of its part of the global batch, must train as one replica on the whole global batch: the same
// weights and logs, up to the summation order of the gradients.
#include <catch2/catch.hpp>


#include "framework/distribute/strategy.h"
#include "framework/ember.h"
#include "tests/support/distribute_cases.h"

using namespace ember;
using distribute::MirroredStrategy;
using namespace ember::testing;

namespace {

using Data = DistributeData;
using Make = std::function<std::shared_ptr<Sequential>()>;

std::shared_ptr<Sequential> make_mlp() { return mlp(1); }
std::shared_ptr<Sequential> make_cnn() { return cnn(1); }

std::shared_ptr<Sequential> with_batch_norm() {
  backend::clear_session();
  random::set_seed(1);
  return std::make_shared<Sequential>(std::vector<SequentialEntry>{
      layers::Input({8}), layers::Dense(16), layers::BatchNormalization(), layers::Dense(3)});
}

// The model built and compiled in the strategy's scope.
std::shared_ptr<Sequential> in_scope(const MirroredStrategy& s, const Make& make, bool eager) {
  auto scope = s.scope();
  auto m = make();
  compile_for_distribute(*m, eager);
  return m;
}

void check_same_history(const History& a, const History& b) {
  for (const auto& [name, values] : a.history) {
    INFO(name);
    REQUIRE(b.history.count(name));
    REQUIRE(b.history.at(name).size() == values.size());
    for (size_t e = 0; e < values.size(); ++e) CHECK(b.history.at(name)[e] == Approx(values[e]).epsilon(1e-5));
  }
}

// fit under `s` against fit of the same model alone, at the same global batch.
void check_fit_matches_one_replica(const MirroredStrategy& s, const Make& make, const Data& d, bool eager,
                                   int64_t batch_size = 32) {
  const FitOptions options{
      .batch_size = batch_size, .epochs = 2, .verbose = 0, .validation_data = {d.x, d.y}, .shuffle = false};
  auto reference = make();
  compile_for_distribute(*reference, eager);
  const History h1 = reference->fit(d.x, d.y, options);
  auto m = in_scope(s, make, eager);
  const History h2 = m->fit(d.x, d.y, options);
  check_close(m->get_weights(), reference->get_weights(), 1e-5);
  check_same_history(h1, h2);
  CHECK(h2.history.count("val_loss"));
}

}  // namespace

TEST_CASE("distribute: MirroredStrategy takes a device once per replica", "[distribute]") {
  DeviceScope on_cpu(Device::cpu());  // the replicas' device, where the models must live
  const MirroredStrategy s({.devices = {Device::cpu(), Device::cpu()}});
  CHECK(s.num_replicas_in_sync() == 2);
  CHECK(s.num_replicas_in_process() == 2);
  CHECK(s.devices() == std::vector<Device>{Device::cpu(), Device::cpu()});
  CHECK(s.cluster_resolver().num_workers == 1);
  if (device_count(DeviceType::CUDA) == 0) {
    CHECK(MirroredStrategy().num_replicas_in_sync() == 1);  // the CPU
    CHECK_THROWS_AS(MirroredStrategy({.devices = {Device::cpu(), Device::cuda(0)}}), InvalidArgument);
    CHECK_THROWS_WITH(MirroredStrategy({.devices = {Device::cpu(), Device::cuda(0)}}),
                      Catch::Contains("cuda:0") && Catch::Contains("0 GPUs are visible"));
  }
}

TEST_CASE("distribute: MirroredStrategy with 2 replicas fits an MLP as one replica on the global batch", "[distribute]") {
  DeviceScope on_cpu(Device::cpu());  // the replicas' device, where the models must live
  const MirroredStrategy s({.devices = {Device::cpu(), Device::cpu()}});
  const Data d = mlp_data();
  SECTION("traced") { check_fit_matches_one_replica(s, make_mlp, d, false); }
  SECTION("eager") { check_fit_matches_one_replica(s, make_mlp, d, true); }
}

TEST_CASE("distribute: MirroredStrategy with 2 replicas fits a CNN as one replica on the global batch", "[distribute]") {
  DeviceScope on_cpu(Device::cpu());  // the replicas' device, where the models must live
  const MirroredStrategy s({.devices = {Device::cpu(), Device::cpu()}});
  check_fit_matches_one_replica(s, make_cnn, cnn_data(), false);
}

TEST_CASE("distribute: MirroredStrategy with 3 replicas fits as one replica", "[distribute]") {
  DeviceScope on_cpu(Device::cpu());  // the replicas' device, where the models must live
  const MirroredStrategy s({.devices = {Device::cpu(), Device::cpu(), Device::cpu()}});
  CHECK(s.num_replicas_in_sync() == 3);
  const Data d = mlp_data();
  check_fit_matches_one_replica(s, make_mlp, {d.x.slice_rows(0, 192), d.y.slice_rows(0, 192)}, false, 48);
}

TEST_CASE("distribute: MirroredStrategy's replicas combine in a fixed order: runs agree bit for bit", "[distribute]") {
  DeviceScope on_cpu(Device::cpu());  // the replicas' device, where the models must live
  const MirroredStrategy s({.devices = {Device::cpu(), Device::cpu()}});
  const Data d = mlp_data();
  auto run = [&] {
    auto m = in_scope(s, make_mlp, false);
    m->fit(d.x, d.y, {.batch_size = 32, .epochs = 1, .verbose = 0, .shuffle = false});
    return m->get_weights();
  };
  const std::vector<Tensor> a = run(), b = run();
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i].to_vector<float>() == b[i].to_vector<float>());
}

TEST_CASE("distribute: MirroredStrategy evaluates and trains on a batch as one replica", "[distribute]") {
  DeviceScope on_cpu(Device::cpu());  // the replicas' device, where the models must live
  const MirroredStrategy s({.devices = {Device::cpu(), Device::cpu()}});
  const Data d = mlp_data();
  auto reference = make_mlp();
  compile_for_distribute(*reference, false);
  auto m = in_scope(s, make_mlp, false);
  const Tensor x = d.x.slice_rows(0, 64), y = d.y.slice_rows(0, 64);
  const Logs a = reference->train_on_batch(x, y), b = m->train_on_batch(x, y);
  for (const auto& [name, value] : a) CHECK(b.at(name) == Approx(value).epsilon(1e-5));
  check_close(m->get_weights(), reference->get_weights(), 1e-5);
  const Logs ea = reference->evaluate(d.x, d.y, {.batch_size = 32, .verbose = 0});
  const Logs eb = m->evaluate(d.x, d.y, {.batch_size = 32, .verbose = 0});
  for (const auto& [name, value] : ea) CHECK(eb.at(name) == Approx(value).epsilon(1e-5));
  const Logs ta = reference->test_on_batch(x, y), tb = m->test_on_batch(x, y);
  for (const auto& [name, value] : ta) CHECK(tb.at(name) == Approx(value).epsilon(1e-5));
  // predict is not split: the whole batch, as the model alone.
  check_close({m->predict(x, {.verbose = 0})}, {reference->predict(x, {.verbose = 0})}, 1e-5);
}

TEST_CASE("distribute: MirroredStrategy evaluates a model without Input, built by its first batch", "[distribute]") {
  DeviceScope on_cpu(Device::cpu());
  const MirroredStrategy s({.devices = {Device::cpu(), Device::cpu()}});
  const Data d = mlp_data();
  const Make unbuilt = [] {
    backend::clear_session();
    random::set_seed(1);
    return std::make_shared<Sequential>(std::vector<SequentialEntry>{layers::Dense(16, {.activation = "relu"}), layers::Dense(3)});
  };
  auto reference = unbuilt();
  compile_for_distribute(*reference, false);
  const Logs a = reference->evaluate(d.x, d.y, {.batch_size = 32, .verbose = 0});  // built here, from seed 1
  auto m = in_scope(s, unbuilt, false);
  const Logs b = m->evaluate(d.x, d.y, {.batch_size = 32, .verbose = 0});          // and here
  for (const auto& [name, value] : a) CHECK(b.at(name) == Approx(value).epsilon(1e-5));
}

TEST_CASE("distribute: MirroredStrategy's replicas average the moving statistics they assign", "[distribute]") {
  DeviceScope on_cpu(Device::cpu());  // the replicas' device, where the models must live
  // Each replica normalises by its own part's statistics (TF's BatchNormalization without synchronisation), and
  // the moving mean becomes the mean of the replicas' updates: with equal parts, the whole batch's update.
  const MirroredStrategy s({.devices = {Device::cpu(), Device::cpu()}});
  const Data d = mlp_data();
  auto reference = with_batch_norm();
  compile_for_distribute(*reference, false);
  auto m = in_scope(s, with_batch_norm, false);
  const Tensor x = d.x.slice_rows(0, 64), y = d.y.slice_rows(0, 64);
  reference->train_on_batch(x, y);
  m->train_on_batch(x, y);
  auto moving_mean = [](Sequential& model) {
    for (const Variable& v : model.non_trainable_weights())
      if (v.name().find("moving_mean") != std::string::npos) return v.value();
    FAIL("no moving_mean");
    return Tensor();
  };
  check_close({moving_mean(*m)}, {moving_mean(*reference)}, 1e-6);
  // Sequential updates would have moved it twice: it differs from the initial zeros by one step's worth.
  CHECK(ops::reduce_max(ops::abs(moving_mean(*m))).item<float>() > 0);
}

TEST_CASE("distribute: MirroredStrategy refuses a batch its replicas cannot share evenly", "[distribute]") {
  DeviceScope on_cpu(Device::cpu());  // the replicas' device, where the models must live
  const MirroredStrategy s({.devices = {Device::cpu(), Device::cpu()}});
  const Data d = mlp_data();
  auto m = in_scope(s, make_mlp, false);
  CHECK_THROWS_AS(m->fit(d.x.slice_rows(0, 63), d.y.slice_rows(0, 63), {.batch_size = 63, .verbose = 0}),
                  InvalidArgument);
  CHECK_THROWS_WITH(m->fit(d.x.slice_rows(0, 63), d.y.slice_rows(0, 63), {.batch_size = 63, .verbose = 0}),
                    Catch::Contains("global batch of 63 samples cannot be split evenly across 2 replicas") &&
                        Catch::Contains("multiple of 2"));
}

TEST_CASE("distribute: MirroredStrategy's replicas use their own copy's regularization losses", "[distribute]") {
  DeviceScope on_cpu(Device::cpu());  // the replicas' device, where the models must live
  const MirroredStrategy s({.devices = {Device::cpu(), Device::cpu()}});
  const Make regularized = [] {
    backend::clear_session();
    random::set_seed(1);
    return std::make_shared<Sequential>(std::vector<SequentialEntry>{
        layers::Input({8}), layers::Dense(16, {.activation = "relu", .kernel_regularizer = regularizers::L2(0.01)}),
        layers::Dense(3)});
  };
  check_fit_matches_one_replica(s, regularized, mlp_data(), false);
}

TEST_CASE("distribute: MirroredStrategy names what it does not support", "[distribute]") {
  DeviceScope on_cpu(Device::cpu());  // the replicas' device, where the models must live
  const MirroredStrategy s({.devices = {Device::cpu(), Device::cpu()}});
  // The replicas after the first are copies of the model: a subclassed model cannot be copied.
  struct Custom : Model {
    layers::Dense dense{3};
    Tensor call(const Tensor& x, bool) override { return dense(x); }
  };
  std::shared_ptr<Custom> m;
  {
    auto scope = s.scope();
    m = std::make_shared<Custom>();
    m->compile({.optimizer = "sgd", .loss = "mse"});
  }
  const Data d = mlp_data();
  const Tensor y = random::normal({256, 3});
  CHECK_THROWS_AS(m->fit(d.x, y, {.batch_size = 32, .verbose = 0}), Unimplemented);
  CHECK_THROWS_WITH(m->fit(d.x, y, {.batch_size = 32, .verbose = 0}),
                    Catch::Contains("copy of the model") && Catch::Contains("subclassed"));
}

TEST_CASE("distribute: MirroredStrategy's reduce sums a PerReplica and refuses to sum a tensor, as TF",
          "[distribute]") {
  const MirroredStrategy s({.devices = {Device::cpu(), Device::cpu()}});
  const Tensor a = Tensor::from_vector<float>({1, 2, 3}), b = Tensor::from_vector<float>({10, 20, 30});
  const distribute::PerReplica<Tensor> values{{a, b}};
  CHECK(s.reduce(distribute::ReduceOp::SUM, values).to_vector<float>() == std::vector<float>{11, 22, 33});
  CHECK(s.reduce(distribute::ReduceOp::MEAN, values).to_vector<float>() == std::vector<float>{5.5f, 11, 16.5f});
  // A tensor is the same value on every replica: its mean is itself, its sum is not defined (TF's ValueError).
  CHECK(s.reduce(distribute::ReduceOp::MEAN, a).to_vector<float>() == std::vector<float>{1, 2, 3});
  CHECK_THROWS_AS(s.reduce(distribute::ReduceOp::SUM, a), InvalidArgument);
  CHECK_THROWS_WITH(s.reduce(distribute::ReduceOp::SUM, a),
                    Catch::Contains("MirroredStrategy.reduce") && Catch::Contains("2 replicas") &&
                        Catch::Contains("PerReplica"));
  CHECK_THROWS_WITH(s.reduce(distribute::ReduceOp::SUM, distribute::PerReplica<Tensor>{{a}}),
                    Catch::Contains("PerReplica of 1 values") && Catch::Contains("2 replicas"));
  const distribute::PerReplica<Tensor> unlike{{a, Tensor::from_vector<float>({1})}};
  CHECK_THROWS_WITH(s.reduce(distribute::ReduceOp::SUM, unlike),
                    Catch::Contains("the replicas' values differ"));
  // One replica: a tensor is its own sum.
  const MirroredStrategy one({.devices = {Device::cpu()}});
  CHECK(one.reduce(distribute::ReduceOp::SUM, a).to_vector<float>() == std::vector<float>{1, 2, 3});
}

TEST_CASE("distribute: MirroredStrategy.run calls fn once per replica, each with its own arguments", "[distribute]") {
  const MirroredStrategy s({.devices = {Device::cpu(), Device::cpu()}});
  const distribute::PerReplica<Tensor> own{{Tensor::scalar<float>(1), Tensor::scalar<float>(2)}};
  const data::Element batch{Tensor::from_vector<float>({1, 2, 3, 4})};
  const distribute::PerReplica<Tensor> out = s.run(
      [](const Tensor& mine, const data::Element& part, float shared) {
        const auto ctx = distribute::get_replica_context();
        REQUIRE(ctx);
        CHECK(ctx->num_replicas_in_sync() == 2);
        const auto id = static_cast<float>(ctx->replica_id_in_sync_group());
        return ops::reduce_sum(part[0]) * mine + Tensor::scalar<float>(shared * 100 * id);
      },
      own, s.replica_batches(batch, "test"), 1.0f);
  REQUIRE(out.values.size() == 2);
  CHECK(out.values[0].item<float>() == 3);          // rows 1, 2, times 1
  CHECK(out.values[1].item<float>() == 14 + 100);   // rows 3, 4, times 2, replica 1
  CHECK(s.reduce(distribute::ReduceOp::SUM, out).item<float>() == 117);
  CHECK_FALSE(distribute::get_replica_context());  // left after the run
  // The replica context cannot all-reduce: the replicas run one after another.
  const auto all_reduce_one = [] {
    distribute::get_replica_context()->all_reduce(distribute::ReduceOp::SUM, {Tensor::scalar<float>(1)});
  };
  CHECK_THROWS_AS(s.run(all_reduce_one), Unimplemented);
  CHECK_THROWS_WITH(s.run([](const Tensor&) {}, distribute::PerReplica<Tensor>{{Tensor()}}),
                    Catch::Contains("PerReplica of 1 values"));
}

TEST_CASE("distribute: a custom loop with MirroredStrategy.run over 2 replicas trains as one replica", "[distribute]") {
  DeviceScope on_cpu(Device::cpu());
  const MirroredStrategy s({.devices = {Device::cpu(), Device::cpu()}});
  const Data d = mlp_data();
  const auto ds = data::Dataset::from_tensor_slices({d.x, d.y}).batch(64);
  const losses::SparseCategoricalCrossentropy loss_fn({.from_logits = true});
  // Each replica's gradients applied by the optimizer, which applies their sum (as TF's): inside the run the Loss's
  // mean is divided by the replicas (Keras 3 under TF), so the sum is the global batch's gradient.
  auto step = [&](Sequential& m, optimizers::Optimizer& opt, const data::Element& batch) {
    std::vector<Variable> vars = m.trainable_weights();
    Tensor loss;
    std::vector<Tensor> grads;
    {
      GradientTape tape;
      loss = loss_fn(batch[1], m(batch[0], true));
      grads = tape.gradient(loss, std::vector<Tensor>(vars.begin(), vars.end()));
    }
    opt.apply(grads, vars);
    return loss;
  };
  auto reference = mlp(1);
  optimizers::Adam ref_opt({.learning_rate = 0.01});
  std::vector<float> ref_losses;
  for (const data::Element& b : ds) ref_losses.push_back(step(*reference, ref_opt, b).item<float>());

  std::shared_ptr<Sequential> m;
  {
    auto scope = s.scope();
    m = mlp(1);
  }
  optimizers::Adam opt({.learning_rate = 0.01});
  std::vector<float> losses;
  for (const data::Element& b : s.experimental_distribute_dataset(ds)) {
    CHECK(b.size() == 4);  // two replicas' parts of (x, y)
    CHECK(b[0].shape()[0] == 32);
    const distribute::PerReplica<Tensor> per_replica =
        s.run([&](const data::Element& part) { return step(*m, opt, part); }, b);
    losses.push_back(s.reduce(distribute::ReduceOp::SUM, per_replica).item<float>());  // each replica's share
  }
  REQUIRE(losses.size() == 4);
  for (size_t i = 0; i < losses.size(); ++i) CHECK(losses[i] == Approx(ref_losses[i]).epsilon(1e-5));
  CHECK(opt.iterations().value().item<int64_t>() == 4);  // one update per step, not one per replica
  check_close(m->get_weights(), reference->get_weights(), 1e-5);

  // Every replica applies, or none: an optimizer given one replica's gradients only is refused.
  CHECK_THROWS_WITH(s.run([&](const data::Element& part) {
                      if (distribute::get_replica_context()->replica_id_in_sync_group() == 0) step(*m, opt, part);
                    }, *s.experimental_distribute_dataset(ds).begin()),
                    Catch::Contains("every replica must apply"));
}

TEST_CASE("distribute: MirroredStrategy on one GPU combines the replicas' values through NCCL", "[distribute][cuda]") {
  if (device_count(DeviceType::CUDA) == 0) {
    WARN("no CUDA device (device_count(DeviceType::CUDA) == 0): skipped");
    return;
  }
  // The replicas of distinct GPUs (here one) are all-reduced by NCCL between them: a sum of one is the value.
  const MirroredStrategy s({.devices = {Device::cuda(0)}});
  const Tensor a = Tensor::from_vector<float>({1, 2, 3}).to(Device::cuda(0));
  const Tensor b = Tensor::from_vector<double>({4, 5}).to(Device::cuda(0));
  const Tensor sum = s.reduce(distribute::ReduceOp::SUM, distribute::PerReplica<Tensor>{{a}});
  CHECK(sum.device() == Device::cuda(0));
  CHECK(sum.to(Device::cpu()).to_vector<float>() == std::vector<float>{1, 2, 3});
  const std::vector<Tensor> both = s.combine_replica_gradients(distribute::ReduceOp::MEAN, {{a, Tensor(), b}});
  CHECK(both[0].to(Device::cpu()).to_vector<float>() == std::vector<float>{1, 2, 3});
  CHECK_FALSE(both[1].defined());
  CHECK(both[2].to(Device::cpu()).to_vector<double>() == std::vector<double>{4, 5});
}

TEST_CASE("distribute: MirroredStrategy with 2 replicas on one GPU fits as the GPU alone", "[distribute][cuda]") {
  if (device_count(DeviceType::CUDA) == 0) {
    WARN("no CUDA device (device_count(DeviceType::CUDA) == 0): skipped");
    return;
  }
  DeviceScope on_gpu(Device::cuda(0));
  const MirroredStrategy s({.devices = {Device::cuda(0), Device::cuda(0)}});
  check_fit_matches_one_replica(s, make_mlp, mlp_data(), false);
}

TEST_CASE("distribute: MirroredStrategy over the CPU and a GPU fits as one replica", "[distribute][cuda]") {
  if (device_count(DeviceType::CUDA) == 0) {
    WARN("no CUDA device (device_count(DeviceType::CUDA) == 0): skipped");
    return;
  }
  // Replica 0 (the model, on the GPU) and a copy on the CPU: each runs on its own device.
  DeviceScope on_gpu(Device::cuda(0));
  {
    // The model on the GPU, but the strategy's first replica on the CPU.
    const MirroredStrategy on_cpu({.devices = {Device::cpu(), Device::cpu()}});
    auto m = in_scope(on_cpu, make_mlp, false);
    const Data d = mlp_data();
    CHECK_THROWS_WITH(m->fit(d.x, d.y, {.batch_size = 32, .verbose = 0}),
                      Catch::Contains("is on cuda:0") && Catch::Contains("DeviceScope(cpu:0)"));
  }
  const MirroredStrategy s({.devices = {Device::cuda(0), Device::cpu()}});
  check_fit_matches_one_replica(s, make_mlp, mlp_data(), false);
  check_fit_matches_one_replica(s, make_cnn, cnn_data(), true);
}

TEST_CASE("distribute: MirroredStrategy over every visible GPU fits as one replica", "[distribute][cuda]") {
  if (device_count(DeviceType::CUDA) == 0) {
    WARN("no CUDA device (device_count(DeviceType::CUDA) == 0): skipped");
    return;
  }
  DeviceScope on_gpu(Device::cuda(0));
  const MirroredStrategy s;  // one replica per GPU (one GPU: one replica, through NCCL)
  CHECK(s.num_replicas_in_sync() == device_count(DeviceType::CUDA));
  const int64_t batch = 8 * s.num_replicas_in_sync(), rows = 256 / batch * batch;
  const Data d = mlp_data();
  check_fit_matches_one_replica(s, make_mlp, {d.x.slice_rows(0, rows), d.y.slice_rows(0, rows)}, false, batch);
}
