// compute_average_loss and scale_regularization_loss (TF: tf.nn's), and the losses of a custom loop under
// strategy.run, whose optimizer sums the replicas' gradients as TF's does.
#include <catch2/catch.hpp>

#include <limits>

#include "framework/distribute/replica_loss.h"
#include "framework/distribute/strategy.h"
#include "framework/ember.h"
#include "tests/support/distribute_cases.h"

using namespace ember;
using distribute::MirroredStrategy;
using distribute::ReduceOp;
using namespace ember::testing;

TEST_CASE("distribute: compute_average_loss divides the weighted sum by the global batch size, as TF", "[distribute]") {
  const Tensor losses = Tensor::from_vector<float>({1, 2, 3, 4});
  using distribute::compute_average_loss;
  // Outside any strategy one replica: the global batch is the first dimension.
  CHECK(compute_average_loss(losses).item<float>() == 2.5f);
  CHECK(compute_average_loss(losses, {.global_batch_size = 8}).item<float>() == 1.25f);
  // Zero: div_no_nan's 0.
  CHECK(compute_average_loss(losses, {.global_batch_size = 0}).item<float>() == 0.0f);
  // Weights: a vector, a column (its trailing 1 squeezed), a scalar.
  const Tensor w = Tensor::from_vector<float>({1, 0, 2, 0});
  CHECK(compute_average_loss(losses, {.sample_weight = w}).item<float>() == 7.0f / 4);
  CHECK(compute_average_loss(losses, {.sample_weight = ops::reshape(w, {4, 1})}).item<float>() == 7.0f / 4);
  CHECK(compute_average_loss(losses, {.sample_weight = Tensor::scalar<float>(2)}).item<float>() == 5.0f);
  // Several losses per example are all summed; a weight per example is expanded over them.
  const Tensor per_step = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(compute_average_loss(per_step).item<float>() == 10.5f);
  CHECK(compute_average_loss(per_step, {.sample_weight = Tensor::from_vector<float>({1, 0})}).item<float>() == 3.0f);
  // The result keeps the losses' dtype.
  const Tensor d = compute_average_loss(Tensor::from_vector<double>({1, 2}));
  CHECK(d.dtype() == DType::Float64);
  CHECK(d.item<double>() == 1.5);
}

TEST_CASE("distribute: compute_average_loss and scale_regularization_loss name bad input", "[distribute]") {
  using distribute::compute_average_loss;
  CHECK_THROWS_AS(compute_average_loss(Tensor::scalar<float>(1)), InvalidArgument);
  CHECK_THROWS_WITH(compute_average_loss(Tensor::scalar<float>(1)),
                    Catch::Contains("compute_average_loss") && Catch::Contains("rank 1 or more") &&
                        Catch::Contains("reduction \"none\""));
  const Tensor losses = Tensor::from_vector<float>({1, 2, 3, 4});
  CHECK_THROWS_WITH(compute_average_loss(losses, {.global_batch_size = -1}),
                    Catch::Contains("global_batch_size must be non-negative, got -1"));
  CHECK_THROWS_WITH(compute_average_loss(Tensor::from_vector<int32_t>({1, 2})),
                    Catch::Contains("floating") && Catch::Contains("int32"));
  CHECK_THROWS_WITH(compute_average_loss(losses, {.sample_weight = Tensor::from_vector<float>({1, 2, 3})}),
                    Catch::Contains("sample_weight of shape (3,)") && Catch::Contains("(4,)"));
  CHECK_THROWS_WITH(compute_average_loss(losses, {.sample_weight = ops::zeros({4, 2})}),
                    Catch::Contains("not 1"));
  // In a strategy's scope but outside its run (TF's cross-replica context): a RuntimeError in TF.
  const MirroredStrategy s({.devices = {Device::cpu(), Device::cpu()}});
  {
    auto scope = s.scope();
    CHECK_THROWS_AS(compute_average_loss(losses), FailedPrecondition);
    CHECK_THROWS_WITH(compute_average_loss(losses),
                      Catch::Contains("cross-replica context") && Catch::Contains(".global_batch_size"));
    CHECK(compute_average_loss(losses, {.global_batch_size = 2}).item<float>() == 5.0f);
    CHECK_THROWS_WITH(distribute::scale_regularization_loss(losses),
                      Catch::Contains("scale_regularization_loss") && Catch::Contains("cross-replica context"));
  }
  CHECK_THROWS_WITH(distribute::scale_regularization_loss(Tensor::from_vector<int64_t>({1})),
                    Catch::Contains("floating"));
}

TEST_CASE("distribute: inside strategy.run the losses are each replica's share of the global batch's", "[distribute]") {
  const MirroredStrategy s({.devices = {Device::cpu(), Device::cpu()}});
  const Tensor losses = Tensor::from_vector<float>({1, 2, 3, 4});
  const distribute::PerReplica<Tensor> out = s.run([&] {
    // The default global batch: 4 examples on each of 2 replicas.
    const Tensor average = distribute::compute_average_loss(losses);
    const Tensor regularization = distribute::scale_regularization_loss(Tensor::from_vector<float>({3, 5}));
    // A Loss's mean reduction is divided by the replicas too (Keras 3 under TF); "sum" is not.
    const Tensor y = Tensor::from_vector<float>({0, 0}), p = Tensor::from_vector<float>({1, 3});
    const Tensor mean = losses::MeanSquaredError()(ops::reshape(y, {2, 1}), ops::reshape(p, {2, 1}));
    const Tensor sum = losses::MeanSquaredError({.reduction = "sum"})(ops::reshape(y, {2, 1}), ops::reshape(p, {2, 1}));
    return ops::stack({average, regularization, mean, sum}, 0);
  });
  for (const Tensor& v : out.values)
    CHECK(v.to_vector<float>() == std::vector<float>{1.25f, 4.0f, 2.5f, 10.0f});
  // Outside the run the Loss is the plain mean.
  CHECK(losses::MeanSquaredError()(Tensor::from_vector<float>({0, 0}, {2, 1}), Tensor::from_vector<float>({1, 3}, {2, 1}))
            .item<float>() == 5.0f);
}

TEST_CASE("distribute: the optimizer inside strategy.run applies the SUM of the replicas' gradients, as TF's",
          "[distribute]") {
  // TF's optimizer sums the replicas' gradients: gradients 1 and 3 move the variable by 4 (a mean would move it
  // by 2).
  const MirroredStrategy s({.devices = {Device::cpu(), Device::cpu()}});
  Variable v(Tensor::from_vector<float>({10}), {.name = "v"});
  optimizers::SGD opt({.learning_rate = 1.0});
  const distribute::PerReplica<Tensor> grads{{Tensor::from_vector<float>({1}), Tensor::from_vector<float>({3})}};
  s.run([&](const Tensor& g) { opt.apply({g}, {v}); }, grads);
  CHECK(v.value().to_vector<float>() == std::vector<float>{6});
  CHECK(opt.iterations().value().item<int64_t>() == 1);
}

namespace {

// One step of TF's custom loop: per-example losses averaged over the global batch (64) with weights, plus the
// regularization scaled by the replicas; the optimizer sums the replicas' gradients.
Tensor average_loss_step(Sequential& m, optimizers::Optimizer& opt, const data::Element& batch) {
  const losses::SparseCategoricalCrossentropy per_example({.from_logits = true, .reduction = "none"});
  std::vector<Variable> vars = m.trainable_weights();
  Tensor loss;
  std::vector<Tensor> grads;
  {
    GradientTape tape;
    loss = distribute::compute_average_loss(per_example(batch[1], m(batch[0], true)),
                                            {.sample_weight = batch[2], .global_batch_size = 64});
    loss = loss + distribute::scale_regularization_loss(0.01f * ops::reduce_sum(ops::square(vars[0].value())));
    grads = tape.gradient(loss, std::vector<Tensor>(vars.begin(), vars.end()));
  }
  opt.apply(grads, vars);
  return loss;
}

}  // namespace

TEST_CASE("distribute: a custom loop with compute_average_loss over 2 replicas trains as one replica", "[distribute]") {
  DeviceScope on_cpu(Device::cpu());
  const MirroredStrategy s({.devices = {Device::cpu(), Device::cpu()}});
  const DistributeData d = mlp_data();
  const Tensor w = ops::cast(ops::equal(d.y, Tensor::scalar<int64_t>(0)), DType::Float32) + 0.5f;
  const auto ds = data::Dataset::from_tensor_slices({d.x, d.y, w}).batch(64);
  auto reference = mlp(1);
  optimizers::SGD ref_opt({.learning_rate = 0.5, .momentum = 0.9});
  std::vector<float> ref_losses;
  for (const data::Element& b : ds) ref_losses.push_back(average_loss_step(*reference, ref_opt, b).item<float>());

  std::shared_ptr<Sequential> m;
  {
    auto scope = s.scope();
    m = mlp(1);
  }
  optimizers::SGD opt({.learning_rate = 0.5, .momentum = 0.9});
  std::vector<float> losses;
  for (const data::Element& b : s.experimental_distribute_dataset(ds)) {
    const distribute::PerReplica<Tensor> per_replica =
        s.run([&](const data::Element& part) { return average_loss_step(*m, opt, part); }, b);
    losses.push_back(s.reduce(ReduceOp::SUM, per_replica).item<float>());  // the replicas' shares: the loss
  }
  REQUIRE(losses.size() == 4);
  for (size_t i = 0; i < losses.size(); ++i) CHECK(losses[i] == Approx(ref_losses[i]).epsilon(1e-5));
  // Averaged instead of summed, the replicas' gradients would be half the global batch's: other weights.
  check_close(m->get_weights(), reference->get_weights(), 1e-5);
}

TEST_CASE("distribute: LossScaleOptimizer inside strategy.run sums the replicas' scaled gradients before its check",
          "[distribute]") {
  // TF's LossScaleOptimizer all-reduces the scaled gradients (SUM), then checks them: one step for all replicas,
  // skipped by all when one replica's gradient overflows. The inner optimizer applies the sum once.
  const MirroredStrategy s({.devices = {Device::cpu(), Device::cpu()}});
  const bool dynamic = GENERATE(true, false);
  INFO("dynamic " << dynamic);
  Variable v(Tensor::from_vector<float>({10}), {.name = "v"});
  optimizers::LossScaleOptimizer opt(optimizers::SGD({.learning_rate = 1.0}),
                                     {.dynamic = dynamic, .initial_scale = 2.0});
  // Scaled gradients 2 and 6: their sum unscaled moves the variable by 4.
  s.run([&](const Tensor& g) { opt.apply({g}, {v}); },
        distribute::PerReplica<Tensor>{{Tensor::from_vector<float>({2}), Tensor::from_vector<float>({6})}});
  CHECK(v.value().to_vector<float>() == std::vector<float>{6});
  CHECK(opt.iterations().value().item<int64_t>() == 1);
  CHECK(opt.dynamic_scale() == 2.0);
  if (!dynamic) return;
  CHECK(opt.step_counter() == 1);
  // An infinity on replica 1 only: neither replica applies, the scale halves once, the count restarts.
  const float inf = std::numeric_limits<float>::infinity();
  s.run([&](const Tensor& g) { opt.apply({g}, {v}); },
        distribute::PerReplica<Tensor>{{Tensor::from_vector<float>({2}), Tensor::from_vector<float>({inf})}});
  CHECK(v.value().to_vector<float>() == std::vector<float>{6});
  CHECK(opt.iterations().value().item<int64_t>() == 1);
  CHECK(opt.dynamic_scale() == 1.0);
  CHECK(opt.step_counter() == 0);
  CHECK(opt.inner_optimizer()->iterations().value().item<int64_t>() == 1);
}

TEST_CASE("distribute: a custom loop with a dynamic LossScaleOptimizer over 2 replicas trains as one replica",
          "[distribute]") {
  DeviceScope on_cpu(Device::cpu());
  check_loss_scaled_loop_matches_one_replica(MirroredStrategy({.devices = {Device::cpu(), Device::cpu()}}));
}

TEST_CASE("distribute: a subclassed model's own train_step under fit runs once per replica, as TF's strategy.run",
          "[distribute]") {
  DeviceScope on_cpu(Device::cpu());
  const bool eager = GENERATE(false, true);
  INFO("run_eagerly " << eager);
  check_own_train_step_fit_matches_one_replica(MirroredStrategy({.devices = {Device::cpu(), Device::cpu()}}), eager);
}

TEST_CASE("distribute: a subclassed model's own test_step under evaluate and fit's validation runs once per replica",
          "[distribute]") {
  DeviceScope on_cpu(Device::cpu());
  const bool eager = GENERATE(false, true);
  INFO("run_eagerly " << eager);
  check_own_test_step_matches_one_replica(MirroredStrategy({.devices = {Device::cpu(), Device::cpu()}}), eager);
}
