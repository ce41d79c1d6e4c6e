#pragma once
// The data, models and checks that the distribution strategies' tests train with: a strategy's replicas must train
// as one replica on the whole global batch, up to the summation order of the gradients.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "framework/distribute/replica_loss.h"
#include "framework/distribute/strategy.h"
#include "framework/ember.h"

namespace ember::testing {

struct DistributeData {
  Tensor x, y;
};

inline DistributeData mlp_data() {
  random::set_seed(5);
  Tensor x = random::normal({256, 8});
  Tensor y = ops::cast(ops::argmax(ops::matmul(x, random::normal({8, 3})), -1), DType::Int64);
  return {x, y};
}

inline DistributeData cnn_data() {
  random::set_seed(6);
  Tensor x = random::normal({128, 8, 8, 1});
  Tensor y = ops::cast(ops::argmax(ops::matmul(ops::reshape(x, {128, 64}), random::normal({64, 3})), -1), DType::Int64);
  return {x, y};
}

inline std::shared_ptr<Sequential> mlp(uint64_t seed) {
  backend::clear_session();
  random::set_seed(seed);
  return std::make_shared<Sequential>(std::vector<SequentialEntry>{
      layers::Input({8}), layers::Dense(16, {.activation = "relu"}), layers::Dense(3)});
}

inline std::shared_ptr<Sequential> cnn(uint64_t seed) {
  backend::clear_session();
  random::set_seed(seed);
  return std::make_shared<Sequential>(std::vector<SequentialEntry>{
      layers::Input({8, 8, 1}), layers::Conv2D(4, 3, {.activation = "relu"}), layers::MaxPooling2D(2),
      layers::Flatten(), layers::Dense(3)});
}

inline void compile_for_distribute(Sequential& m, bool eager) {
  m.compile({.optimizer = optimizers::SGD({.learning_rate = 0.1, .momentum = 0.9}),
             .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
             .metrics = {"accuracy"},
             .run_eagerly = eager});
}

// Equal up to `tol`, relative to 1 + |b|: gradients averaged over replicas differ from those of the whole batch
// in their summation order only.
inline void check_close(const std::vector<Tensor>& a, const std::vector<Tensor>& b, double tol) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const std::vector<float> u = a[i].to_vector<float>(), v = b[i].to_vector<float>();
    REQUIRE(u.size() == v.size());
    double worst = 0;
    for (size_t k = 0; k < u.size(); ++k)
      worst = std::max(worst, std::abs(double(u[k]) - double(v[k])) / (1 + std::abs(double(v[k]))));
    INFO("tensor " << i);
    CHECK(worst < tol);
  }
}

// One step of a mixed-precision custom loop (TF's guide): the loss averaged over the global batch, scaled, its
// gradients applied by the LossScaleOptimizer.
inline Tensor loss_scaled_step(Sequential& m, optimizers::LossScaleOptimizer& opt, const data::Element& batch) {
  const losses::SparseCategoricalCrossentropy per_example({.from_logits = true, .reduction = "none"});
  std::vector<Variable> vars = m.trainable_weights();
  Tensor loss;
  std::vector<Tensor> grads;
  {
    GradientTape tape;
    loss = distribute::compute_average_loss(per_example(batch[1], m(batch[0], true)));
    grads = tape.gradient(opt.scale_loss(loss), std::vector<Tensor>(vars.begin(), vars.end()));
  }
  opt.apply(grads, vars);
  return loss;
}

inline optimizers::LossScaleOptimizer dynamic_loss_scale_sgd() {
  return optimizers::LossScaleOptimizer(optimizers::SGD({.learning_rate = 0.5, .momentum = 0.9}),
                                        {.initial_scale = 1024.0, .dynamic_growth_steps = 2});
}

// A subclassed model whose own train_step averages its per-example losses over the global batch
// (compute_average_loss without .global_batch_size: it needs the replica context fit's step runs in) and applies
// them with its optimizer, which sums the replicas' gradients.
struct AverageLossStepModel : Model {
  layers::Dense hidden{16, {.activation = "relu"}};
  layers::Dense out{3};
  int steps = 0;
  Tensor call(const Tensor& x, bool training) override { return out(hidden(x, training), training); }
  MetricResults train_step(const data::Element& batch) override {
    const losses::SparseCategoricalCrossentropy per_example({.from_logits = true, .reduction = "none"});
    std::vector<Tensor> x, y;
    Tensor sample_weight;
    unpack_batch(batch, x, y, sample_weight);
    std::vector<Variable> vars = trainable_weights();
    std::vector<Tensor> y_pred, grads;
    Tensor loss;
    {
      GradientTape tape;
      y_pred = {(*this)(x[0], true)};
      loss = distribute::compute_average_loss(per_example(y[0], y_pred[0]));
      grads = tape.gradient(loss, std::vector<Tensor>(vars.begin(), vars.end()));
    }
    optimizer().apply(grads, vars);
    ++steps;
    return compute_metrics(y, y_pred, sample_weight, loss);
  }
  // Its own test_step: the mean loss of the rows it is given to the loss tracker, the accuracy, and a value of its
  // own, the mean logit (which the replicas' results average, as TF's do). It records how many rows it got, and
  // how many of its calls ran in a replica context.
  int test_steps = 0, test_steps_in_replica_context = 0;
  int64_t test_rows = 0;
  MetricResults test_step(const data::Element& batch) override {
    const losses::SparseCategoricalCrossentropy per_example({.from_logits = true, .reduction = "none"});
    std::vector<Tensor> x, y;
    Tensor sample_weight;
    unpack_batch(batch, x, y, sample_weight);
    ++test_steps;
    if (distribute::get_replica_context()) ++test_steps_in_replica_context;
    test_rows = x[0].shape()[0];
    const std::vector<Tensor> y_pred{(*this)(x[0], false)};
    MetricResults results = compute_metrics(y, y_pred, sample_weight, ops::reduce_mean(per_example(y[0], y_pred[0])));
    results.emplace_back("mean_logit", ops::reduce_mean(y_pred[0]));
    return results;
  }
};

inline std::unique_ptr<AverageLossStepModel> average_loss_step_model(const std::vector<Tensor>& weights, bool eager) {
  auto m = std::make_unique<AverageLossStepModel>();
  (*m)(ops::zeros({1, 8}));
  if (!weights.empty()) m->set_weights(weights);
  m->compile({.optimizer = optimizers::SGD({.learning_rate = 0.5, .momentum = 0.9}), .metrics = {"accuracy"},
              .run_eagerly = eager});
  return m;
}

// A custom loop with a dynamic LossScaleOptimizer under `s` (two replicas in all, at a global batch of 64) trains
// as one replica: an infinity in row 40 of the second batch, in replica 1's half only, overflows its gradients (and
// the whole batch's), so every replica skips that step and the scale halves once.
inline void check_loss_scaled_loop_matches_one_replica(const distribute::Strategy& s) {
  REQUIRE(s.num_replicas_in_sync() == 2);
  DistributeData d = mlp_data();
  std::vector<float> x = d.x.to_vector<float>();
  x[(64 + 40) * 8 + 3] = std::numeric_limits<float>::infinity();
  d.x = Tensor::from_vector<float>(x, d.x.shape());
  const auto ds = data::Dataset::from_tensor_slices({d.x, d.y}).batch(64);
  auto reference = mlp(1);
  optimizers::LossScaleOptimizer ref_opt = dynamic_loss_scale_sgd();
  std::vector<double> ref_scales;
  for (const data::Element& b : ds) {
    loss_scaled_step(*reference, ref_opt, b);
    ref_scales.push_back(ref_opt.dynamic_scale());
  }
  // 1024, halved by the overflow, then doubled after two finite steps.
  REQUIRE(ref_scales == std::vector<double>{1024, 512, 512, 1024});
  REQUIRE(ref_opt.iterations().value().item<int64_t>() == 3);

  std::shared_ptr<Sequential> m;
  {
    auto scope = s.scope();
    m = mlp(1);
  }
  optimizers::LossScaleOptimizer opt = dynamic_loss_scale_sgd();
  std::vector<double> scales;
  for (const data::Element& b : s.experimental_distribute_dataset(ds)) {
    s.run([&](const data::Element& part) { return loss_scaled_step(*m, opt, part); }, b);
    scales.push_back(opt.dynamic_scale());
  }
  CHECK(scales == ref_scales);
  CHECK(opt.iterations().value().item<int64_t>() == 3);
  CHECK(opt.step_counter() == ref_opt.step_counter());
  check_close(m->get_weights(), reference->get_weights(), 1e-5);
}

// fit of AverageLossStepModel under `s` (two replicas in all, a global batch of 64) trains as one replica.
inline void check_own_train_step_fit_matches_one_replica(const distribute::Strategy& s, bool eager) {
  REQUIRE(s.num_replicas_in_sync() == 2);
  const DistributeData d = mlp_data();
  backend::clear_session();
  random::set_seed(3);
  auto reference = average_loss_step_model({}, eager);
  const std::vector<Tensor> initial = reference->get_weights();
  reference->fit(d.x, d.y, {.batch_size = 64, .epochs = 2, .verbose = 0, .shuffle = false});
  REQUIRE(reference->steps == (eager ? 8 : 1));  // traced: its one trace

  std::unique_ptr<AverageLossStepModel> m;
  {
    auto scope = s.scope();
    m = average_loss_step_model(initial, eager);
  }
  m->fit(d.x, d.y, {.batch_size = 64, .epochs = 2, .verbose = 0, .shuffle = false});
  // Each replica of the process ran the step on its 32 rows (traced: each in the one trace); the optimizer applied
  // the replicas' sum once per batch.
  CHECK(m->steps == s.num_replicas_in_process() * reference->steps);
  CHECK(m->optimizer().iterations().value().item<int64_t>() == 8);
  check_close(m->get_weights(), reference->get_weights(), 1e-5);
}

// evaluate and fit's validation of AverageLossStepModel under `s` (two replicas in all, a global batch of 64) log as
// one replica: its own test_step runs once per replica of the process, on the replica's rows (TF:
// strategy.run(test_step)), and its own value is the mean of the replicas'.
inline void check_own_test_step_matches_one_replica(const distribute::Strategy& s, bool eager) {
  REQUIRE(s.num_replicas_in_sync() == 2);
  const DistributeData d = mlp_data();
  const auto val = data::Dataset::from_tensor_slices({d.x, d.y}).take(128).batch(64);
  const FitOptions fit_options{.batch_size = 64, .epochs = 1, .verbose = 0, .validation_data = val, .shuffle = false};
  backend::clear_session();
  random::set_seed(3);
  auto reference = average_loss_step_model({}, eager);
  const std::vector<Tensor> initial = reference->get_weights();
  const Logs expected = reference->evaluate(d.x, d.y, {.batch_size = 64, .verbose = 0});
  REQUIRE(reference->test_steps == (eager ? 4 : 1));  // traced: its one trace
  REQUIRE(reference->test_rows == 64);
  REQUIRE(reference->test_steps_in_replica_context == 0);
  REQUIRE(expected.contains("mean_logit"));
  const int ref_test_steps = reference->test_steps;
  const History ref_history = reference->fit(d.x, d.y, fit_options);

  std::unique_ptr<AverageLossStepModel> m;
  {
    auto scope = s.scope();
    m = average_loss_step_model(initial, eager);
  }
  const Logs logs = m->evaluate(d.x, d.y, {.batch_size = 64, .verbose = 0});
  CHECK(m->test_steps == s.num_replicas_in_process() * ref_test_steps);
  CHECK(m->test_steps_in_replica_context == m->test_steps);
  CHECK(m->test_rows == 32);  // each replica's part of the global batch
  REQUIRE(logs.size() == expected.size());
  for (const auto& [name, value] : expected) {
    INFO(name);
    CHECK(logs.at(name) == Approx(value).epsilon(1e-5).margin(1e-6));
  }
  const History history = m->fit(d.x, d.y, fit_options);
  REQUIRE(history.history.count("val_mean_logit"));
  for (const auto& [name, values] : ref_history.history) {
    // The training loss is each replica's share (the step's compute_average_loss), so only the validation's.
    if (!name.starts_with("val_")) continue;
    INFO(name);
    REQUIRE(history.history.at(name).size() == values.size());
    for (size_t e = 0; e < values.size(); ++e)
      CHECK(history.history.at(name)[e] == Approx(values[e]).epsilon(1e-5).margin(1e-6));
  }
}

}  // namespace ember::testing
