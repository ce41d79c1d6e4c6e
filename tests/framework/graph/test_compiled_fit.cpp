// fit, evaluate and predict run their steps as traced functions unless compile asks for run_eagerly, and
// give eager execution's numbers to the bit.
#include <catch2/catch.hpp>

#include <map>
#include <optional>

#include "framework/ember.h"

using namespace ember;

namespace {

std::unique_ptr<Sequential> mlp() {
  random::set_seed(7);
  auto m = std::make_unique<Sequential>();
  m->add(layers::Input({12}));
  m->add(layers::Dense(32, {.activation = "relu"}));
  m->add(layers::Dropout(0.2));
  m->add(layers::Dense(4));
  return m;
}

std::unique_ptr<Sequential> cnn() {
  random::set_seed(8);
  auto m = std::make_unique<Sequential>();
  m->add(layers::Input({8, 8, 1}));
  m->add(layers::Conv2D(4, 3, {.activation = "relu"}));
  m->add(layers::MaxPooling2D(2));
  m->add(layers::Flatten());
  m->add(layers::Dense(4));
  return m;
}

struct Data {
  Tensor x, y;
};
Data data_for(const std::vector<int64_t>& sample, int64_t n) {
  std::vector<int64_t> dims{n};
  dims.insert(dims.end(), sample.begin(), sample.end());
  Tensor x = random::uniform(Shape(dims), {.seed = 3});
  std::vector<int32_t> y(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) y[static_cast<size_t>(i)] = static_cast<int32_t>((i * 7) % 4);
  return {x, Tensor::from_vector<int32_t>(y)};
}

History train(Sequential& m, const Data& d, bool run_eagerly) {
  m.compile({.optimizer = optimizers::Adam({.learning_rate = 1e-2}),
             .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
             .metrics = {"accuracy"},
             .run_eagerly = run_eagerly});
  random::set_seed(99);  // the same shuffles and dropout masks either way
  // 50 samples at batch 16: the last batch of each epoch is partial (a graph made from the full batches' trace).
  return m.fit(d.x, d.y, {.batch_size = 16, .epochs = 3, .verbose = 0, .validation_split = 0.2});
}

void check_same_training(std::unique_ptr<Sequential> (*make)(), const std::vector<int64_t>& sample) {
  const Data d = data_for(sample, 62);
  auto eager = make();
  auto traced = make();
  History he = train(*eager, d, /*run_eagerly=*/true);
  History ht = train(*traced, d, /*run_eagerly=*/false);
  REQUIRE(he.history.size() == ht.history.size());
  for (const auto& [name, values] : he.history) {
    INFO(name);
    CHECK(ht.history.at(name) == values);
  }
  std::vector<Tensor> we = eager->get_weights(), wt = traced->get_weights();
  REQUIRE(we.size() == wt.size());
  for (size_t i = 0; i < we.size(); ++i) CHECK(we[i].to_vector<float>() == wt[i].to_vector<float>());
  CHECK(eager->evaluate(d.x, d.y, {.verbose = 0}) == traced->evaluate(d.x, d.y, {.verbose = 0}));
  CHECK(eager->predict(d.x, {.verbose = 0}).to_vector<float>() ==
        traced->predict(d.x, {.verbose = 0}).to_vector<float>());
}

}  // namespace

TEST_CASE("a compiled fit gives eager execution's History and weights, bit for bit", "[function][fit]") {
  SECTION("MLP") { check_same_training(mlp, {12}); }
  SECTION("CNN") { check_same_training(cnn, {8, 8, 1}); }
}

namespace {
// A model whose own train_step has a C++ side effect: it runs only when the step is traced.
struct CountingModel : Sequential {
  int traced = 0;
  MetricResults train_step(const data::Element& batch) override {
    ++traced;
    return Sequential::train_step(batch);
  }
};
}  // namespace

TEST_CASE("fit traces a model's own train_step once for every batch size; run_eagerly runs it every step",
          "[function][fit]") {
  const Data d = data_for({12}, 40);
  for (bool eagerly : {false, true}) {
    INFO("run_eagerly " << eagerly);
    CountingModel m;
    m.add(layers::Input({12}));
    m.add(layers::Dense(4));
    m.compile({.optimizer = "sgd", .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
               .run_eagerly = eagerly});
    // 40 samples at batch 16: two full batches and one of 8, for 2 epochs. Traced, the step's batch dimension
    // is unknown: one trace serves the last, partial batch too (after two dry probe traces at its first one).
    m.fit(d.x, d.y, {.batch_size = 16, .epochs = 2, .verbose = 0});
    CHECK(m.traced == (eagerly ? 6 : 3));
    if (!eagerly) {
      const auto traced = detail::traced_train_functions(m);
      REQUIRE(traced.size() == 2);  // batch 16, and the graph made for batch 8 from it
      CHECK(traced[0]->input_specs()[0].shape == Shape{16, 12});
      CHECK(traced[1]->input_specs()[0].shape == Shape{8, 12});
    }
    CHECK(m.get_compile_config().at("run_eagerly") == eagerly);
  }
}

TEST_CASE("freezing a layer after compile retraces the steps", "[function][fit]") {
  const Data d = data_for({12}, 32);
  auto m = mlp();
  m->compile({.optimizer = "sgd", .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
  m->fit(d.x, d.y, {.batch_size = 16, .epochs = 1, .verbose = 0});
  const std::vector<Tensor> before = m->get_weights();
  m->layers()[0]->set_trainable(false);
  m->fit(d.x, d.y, {.batch_size = 16, .epochs = 1, .verbose = 0});
  const std::vector<Tensor> after = m->get_weights();
  CHECK(after[0].to_vector<float>() == before[0].to_vector<float>());  // frozen: unchanged
  CHECK(after[2].to_vector<float>() != before[2].to_vector<float>());  // still trained
}

TEST_CASE("a metric that decides on the host (adjusted R2) works in a compiled fit", "[function][fit]") {
  const Tensor x = random::uniform({40, 3}, {.seed = 4});
  const Tensor y = ops::reduce_sum(x, 1, true) * 2.0f;
  std::vector<History> runs;
  for (bool eagerly : {true, false}) {
    random::set_seed(5);
    Sequential m;
    m.add(layers::Input({3}));
    m.add(layers::Dense(1));
    m.compile({.optimizer = "sgd", .loss = "mse",
               .metrics = {metrics::R2Score({.num_regressors = 1})},
               .run_eagerly = eagerly});
    runs.push_back(m.fit(x, y, {.batch_size = 8, .epochs = 2, .verbose = 0, .shuffle = false}));
  }
  CHECK(runs[0].history.at("r2_score") == runs[1].history.at("r2_score"));
  CHECK(runs[0].history.at("loss") == runs[1].history.at("loss"));
}

namespace {

// What a step raises on a batch, run eagerly or compiled (after a first good step traced it: the bad batch replays).
std::string step_error(bool eagerly, const Tensor& x, const Tensor& y) {
  random::set_seed(6);
  backend::clear_session();  // the same layer names both ways
  Sequential m({layers::Input({4}, {.dtype = DType::Int32}), layers::Embedding(10, 3), layers::Flatten(),
                layers::Dense(2)});
  m.compile({.optimizer = "sgd", .loss = "sparse_categorical_crossentropy", .run_eagerly = eagerly});
  m.train_on_batch(Tensor::from_vector(std::vector<int32_t>(32, 1), {8, 4}),
                   Tensor::from_vector(std::vector<int32_t>(8, 1), {8}));
  try {
    m.train_on_batch(x, y);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("a replayed step's error names the layer or loss, as the eager step's does", "[function][fit]") {
  const Tensor good_x = Tensor::from_vector(std::vector<int32_t>(32, 1), {8, 4});
  const Tensor good_y = Tensor::from_vector(std::vector<int32_t>(8, 1), {8});
  const Tensor bad_x = Tensor::from_vector(std::vector<int32_t>(32, 12), {8, 4});
  const Tensor bad_y = Tensor::from_vector(std::vector<int32_t>(8, 5), {8});
  const std::string x_error = step_error(true, bad_x, good_y);
  CHECK_THAT(x_error, Catch::StartsWith("Embedding 'embedding' (input_dim 10): gather: indices[0, 0] = 12"));
  CHECK(step_error(false, bad_x, good_y) == x_error);
  const std::string y_error = step_error(true, good_x, bad_y);
  CHECK_THAT(y_error, Catch::StartsWith("Model 'sequential': loss 'sparse_categorical_crossentropy'") &&
                          Catch::Contains("SparseCategoricalCrossentropy: a label is outside the valid range [0, 2)") &&
                          Catch::Contains("labels[0] = 5") &&
                          Catch::Contains("its targets have shape (None,) and dtype int32"));
  CHECK(step_error(false, good_x, bad_y) == y_error);
  // A replay on another batch size says nothing of the traced batch's size.
  const Tensor bad_y3 = Tensor::from_vector<int32_t>({1, 1, 5}, {3});
  const Tensor x3 = Tensor::from_vector(std::vector<int32_t>(12, 1), {3, 4});
  const std::string y3_error = step_error(true, x3, bad_y3);
  CHECK_THAT(y3_error, Catch::Contains("labels[2] = 5") && Catch::Contains("(None,)"));
  CHECK(step_error(false, x3, bad_y3) == y3_error);
}

TEST_CASE("with_error_context: a replay applies the frames entered inside the function, inside a branch too",
          "[function]") {
  auto wrap = [](std::string what) {
    return [what](const InvalidArgument& e) { throw InvalidArgument(what + ": " + e.what()); };
  };
  const Tensor table = Tensor::from_vector<float>({1, 2, 3});
  auto f = function([&](const Tensor& i, const Tensor& pred) {
    return with_error_context<InvalidArgument>(wrap("outer"), [&] {
      return ops::cond(
          pred,
          [&] {
            return with_error_context<InvalidArgument>(wrap("inner"), [&] { return ops::gather(table, i); });
          },
          [&] { return ops::gather(table, i); });
    });
  });
  const Tensor yes = Tensor::scalar(true), no = Tensor::scalar(false);
  const Tensor good = Tensor::from_vector<int32_t>({0, 2}), bad = Tensor::from_vector<int32_t>({0, 3});
  CHECK(f(good, yes).to_vector<float>() == std::vector<float>{1, 3});  // traced
  CHECK(f.tracing_count() == 1);
  CHECK_THROWS_WITH(f(bad, yes), Catch::StartsWith("outer: inner: gather: indices[1] = 3 is not in [0, 3)"));
  CHECK_THROWS_WITH(f(bad, no), Catch::StartsWith("outer: gather: indices[1] = 3 is not in [0, 3)"));
  CHECK(f.tracing_count() == 1);
  // A frame around the call itself wraps once, not again for the nodes traced inside the function.
  CHECK_THROWS_WITH(with_error_context<InvalidArgument>(wrap("call"), [&] { return f(bad, no); }),
                    Catch::StartsWith("call: outer: gather"));
  // Other error types pass a frame for InvalidArgument untouched; nothing is left entered after an error.
  CHECK_THROWS_AS(with_error_context<InvalidArgument>(wrap("x"), [] { throw NotFound("gone"); }), NotFound);
  CHECK(!ember::detail::current_error_context());
}

TEST_CASE("compiled steps follow a change of the model's layers, weighted or not", "[function][fit]") {
  const Tensor x = Tensor::from_vector<float>({1, -2, 3, 0.5f, -1, 2, 0, 1}, {4, 2}), y = ops::ones({4, 1});
  std::vector<float> popped, frozen_change;
  for (bool eagerly : {true, false}) {
    random::set_seed(1);
    Sequential m({layers::Input({2}), layers::Dense(1), layers::Activation("sigmoid")});
    m.compile({.optimizer = "sgd", .loss = "mse", .run_eagerly = eagerly});
    m.predict(x, {.verbose = 0});
    m.pop();  // the sigmoid, which has no weights
    popped.push_back(m.predict(x, {.verbose = 0}).to_vector<float>()[0]);
    CHECK(popped.back() == m(x).to_vector<float>()[0]);
    m.add(layers::Activation("relu"));  // perhaps where the sigmoid was in memory: told apart all the same
    CHECK(m.predict(x, {.verbose = 0}).to_vector<float>() == m(x).to_vector<float>());

    random::set_seed(1);
    auto bn = std::make_shared<layers::BatchNormalization>(
        layers::BatchNormalizationOptions{.center = false, .scale = false});  // no trainable weights
    Sequential m2({layers::Input({2}), bn, layers::Dense(1)});
    m2.compile({.optimizer = "sgd", .loss = "mse", .run_eagerly = eagerly});
    m2.fit(x, y, {.batch_size = 4, .verbose = 0});
    bn->set_trainable(false);  // runs in inference mode from now on
    const Tensor before = bn->non_trainable_weights()[0].value();
    m2.fit(x, y, {.batch_size = 4, .verbose = 0});
    frozen_change.push_back(
        ops::reduce_max(ops::abs(bn->non_trainable_weights()[0].value() - before)).item<float>());
  }
  CHECK(popped[1] == popped[0]);
  CHECK(frozen_change[0] == 0.0f);
  CHECK(frozen_change[1] == 0.0f);
}

namespace {

// A train_step whose results depend on the batch: "mean_sw" only where the batch has sample weights.
struct NamesPerBatch : Model {
  layers::Dense d{1};
  Tensor call(const Tensor& x, bool) override { return d(x); }
  MetricResults train_step(const data::Element& b) override {
    std::vector<Tensor> x, y;
    Tensor sw;
    unpack_batch(b, x, y, sw);
    std::vector<Tensor> p, g;
    Tensor loss;
    std::vector<Variable> v;
    {
      GradientTape t;
      p = {(*this)(x[0], true)};
      v = trainable_weights();
      loss = compute_loss(y, p, sw);
      g = t.gradient(loss, v);
    }
    optimizer().apply(g, v);
    MetricResults r;
    if (sw.defined()) r.emplace_back("mean_sw", ops::reduce_mean(sw));
    for (auto& kv : compute_metrics(y, p, sw, loss)) r.push_back(kv);
    return r;
  }
};

}  // namespace

TEST_CASE("a train_step's result names are those of the trace that ran", "[function][fit]") {
  const Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {4, 1}), y = x * 2.0f, sw = ops::ones({4}) * 9.0f;
  std::vector<std::vector<std::map<std::string, std::vector<double>>>> runs;
  for (bool eagerly : {true, false}) {
    random::set_seed(1);
    NamesPerBatch m;
    m.compile({.optimizer = optimizers::SGD({.learning_rate = 0.001}), .loss = "mse", .metrics = {"mae"},
               .run_eagerly = eagerly});
    runs.emplace_back();
    for (const Tensor& w : {sw, Tensor(), sw})
      runs.back().push_back(
          m.fit(x, y, {.batch_size = 4, .verbose = 0, .shuffle = false, .sample_weight = w}).history);
  }
  CHECK(runs[1][2].count("mean_sw") == 1);
  CHECK(runs[1][1].count("mean_sw") == 0);
  CHECK(runs[1] == runs[0]);
}

TEST_CASE("steps_per_execution runs a group of batches with different tensor counts as eager steps do",
          "[function][fit]") {
  std::vector<std::vector<float>> kernels;
  std::vector<double> losses;
  for (bool eagerly : {true, false}) {
    random::set_seed(1);
    Sequential m({layers::Input({2}), layers::Dense(1)});
    m.compile({.optimizer = "sgd", .loss = "mse", .run_eagerly = eagerly, .steps_per_execution = 3});
    auto ds = data::Dataset::from_generator([]() {
      return [i = 0]() mutable -> std::optional<data::Element> {
        if (i == 3) return std::nullopt;
        ++i;
        data::Element e{Tensor::from_vector<float>({1.f * i, 2, 3, 4.f * i}, {2, 2}),
                        Tensor::from_vector<float>({1, 2}, {2, 1})};
        if (i == 3) e.push_back(Tensor::from_vector<float>({0, 0}, {2}));  // sample weights on the last only
        return e;
      };
    });
    losses.push_back(m.fit(ds, {.verbose = 0}).history.at("loss")[0]);
    kernels.push_back(m.weights()[0].value().to_vector<float>());
  }
  CHECK(losses[1] == losses[0]);
  CHECK(kernels[1] == kernels[0]);
}
