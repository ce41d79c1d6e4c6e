// compile / fit / evaluate / predict / *_on_batch: numbers against real Keras 3 (fixtures from
// tests/fixtures/training/make_fit_fixtures.py) and the loop's behaviours and errors.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/support/json_fixtures.h"
#include "framework/ember.h"

using namespace ember;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

const json& golden() {
  static const json j = ember::testing::load_json_fixture("training/fit_golden.json");
  return j;
}

// The fixtures' tensors are nested lists, float32 unless a dtype is given.
Tensor from_json(const json& j, DType dtype = DType::Float32) { return ember::testing::tensor_from_nested_json(j, dtype); }

// The fixtures' model: Input(4) -> Dense(3, tanh, L2(0.01) on the kernel) -> Dense(2).
Model fixture_mlp(const json& c) {
  Tensor in = layers::Input({4});
  Tensor h = layers::Dense(3, {.activation = "tanh", .kernel_regularizer = regularizers::L2(0.01)})(in);
  Tensor out = layers::Dense(2)(h);
  Model model(in, out);
  std::vector<Tensor> w;
  for (const auto& v : c["initial_weights"]) w.push_back(from_json(v));
  model.set_weights(w);
  return model;
}

void check_weights(const Model& model, const json& expected, double tol) {
  std::vector<Tensor> w = model.get_weights();
  REQUIRE(w.size() == expected.size());
  for (size_t i = 0; i < w.size(); ++i) {
    std::vector<float> got = w[i].to_vector<float>();
    std::vector<float> want = from_json(expected[i]).to_vector<float>();
    REQUIRE(got.size() == want.size());
    for (size_t k = 0; k < got.size(); ++k) CHECK(got[k] == Approx(want[k]).epsilon(tol).margin(tol));
  }
}

void check_series(const History& h, const json& expected, double tol) {
  for (const auto& [key, values] : expected.items()) {
    INFO("history key " << key);
    REQUIRE(h.history.count(key) == 1);
    const auto& got = h.history.at(key);
    REQUIRE(got.size() == values.size());
    for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(values[i].get<double>()).epsilon(tol));
  }
  CHECK(h.history.size() == expected.size());
}

void check_close(const Tensor& got, const Tensor& want, double tol) {
  REQUIRE(got.shape() == want.shape());
  std::vector<float> g = got.to_vector<float>(), w = want.to_vector<float>();
  for (size_t i = 0; i < g.size(); ++i) CHECK(g[i] == Approx(w[i]).margin(tol));
}

Tensor rand_input(const Shape& shape, uint64_t seed) {
  return random::uniform(shape, {.minval = -1, .maxval = 1, .seed = seed});
}

}  // namespace

TEST_CASE("fit matches Keras: validation_split, batch remainder, regularization, evaluate", "[fit][keras]") {
  backend::clear_session();
  const json& c = golden()["regression"];
  Model model = fixture_mlp(c);
  model.compile({.optimizer = optimizers::SGD({.learning_rate = 0.1}), .loss = "mse", .metrics = {"mae"}});
  Tensor x = from_json(c["x"]), y = from_json(c["y"]);
  History h = model.fit(x, y, {.batch_size = 3, .epochs = 3, .verbose = 0, .validation_split = 0.2, .shuffle = false});
  CHECK(h.epoch == std::vector<int>{0, 1, 2});
  check_series(h, c["history"], 1e-5);
  check_weights(model, c["final_weights"], 1e-5);
  std::map<std::string, double> scores = model.evaluate(x, y, {.batch_size = 4, .verbose = 0});
  CHECK(scores.size() == 2);
  CHECK(scores.at("loss") == Approx(c["evaluate"]["loss"].get<double>()).epsilon(1e-5));
  CHECK(scores.at("mae") == Approx(c["evaluate"]["mae"].get<double>()).epsilon(1e-5));
}

TEST_CASE("fit matches Keras: class_weight, Adam, accuracy from the loss, train_on_batch", "[fit][keras]") {
  backend::clear_session();
  const json& c = golden()["class_weight"];
  Model model = fixture_mlp(c);
  model.compile({.optimizer = optimizers::Adam({.learning_rate = 0.01}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
  Tensor x = from_json(c["x"]), y = from_json(c["y"], DType::Int64);
  History h = model.fit(x, y, {.batch_size = 5, .epochs = 2, .verbose = 0, .shuffle = false,
                               .class_weight = {{0, 0.5}, {1, 2.0}}});
  // (Keras's `metrics` ignore class and sample weights: accuracy above is unweighted.)
  check_series(h, c["history"], 1e-5);
  Tensor x4 = ops::slice(x, {0, 0}, {4, -1}), y4 = ops::slice(y, {0}, {4});
  Logs logs = model.train_on_batch(x4, y4);
  CHECK(logs.at("loss") == Approx(c["train_on_batch"]["loss"].get<double>()).epsilon(1e-5));
  CHECK(logs.at("accuracy") == Approx(c["train_on_batch"]["accuracy"].get<double>()).epsilon(1e-6));
  check_weights(model, c["final_weights"], 1e-5);
  // Logs keep Keras's order: the loss first, then the compiled metrics.
  CHECK(logs.begin()->first == "loss");
}

TEST_CASE("fit on a dataset, with validation data, initial_epoch and steps_per_epoch", "[fit]") {
  backend::clear_session();
  random::set_seed(5);
  Sequential model({layers::Input({3}), layers::Dense(1)});
  model.compile({.optimizer = optimizers::SGD({.learning_rate = 0.2}), .loss = "mse"});
  Tensor x = rand_input({64, 3}, 1);
  Tensor y = ops::reduce_sum(x * Tensor::from_vector<float>({1.f, -2.f, 0.5f}), {1}, true);
  auto ds = data::Dataset::from_tensor_slices({x, y}).batch(16);
  History h = model.fit(ds, {.epochs = 6, .verbose = 0, .validation_data = ds, .initial_epoch = 2});
  CHECK(h.epoch == std::vector<int>{2, 3, 4, 5});
  REQUIRE(h.history.at("loss").size() == 4);
  CHECK(h.history.at("loss").back() < h.history.at("loss").front());
  CHECK(h.history.at("val_loss").size() == 4);
  // evaluate on the same dataset reports what the last validation did (no training in between).
  Logs scores = model.evaluate(ds, {.verbose = 0});
  CHECK(scores.at("loss") == Approx(h.history.at("val_loss").back()).epsilon(1e-6));

  // steps_per_epoch continues one pass across epochs: 4 batches per pass, 3 steps per epoch.
  struct Counter : callbacks::Callback {
    EMBER_CALLBACK(Counter)
    std::vector<int64_t> steps;
    void on_epoch_begin(int, const Logs&) override { steps.push_back(0); }
    void on_train_batch_end(int64_t, const Logs&) override { ++steps.back(); }
  };
  auto counter = std::make_shared<Counter>();
  model.fit(ds, {.epochs = 3, .verbose = 0, .callbacks = {counter}, .steps_per_epoch = 3});
  CHECK(counter->steps == std::vector<int64_t>{3, 1, 3});
  CHECK(counter->params().steps == 3);
}

TEST_CASE("validation_freq and the validation batch size", "[fit]") {
  backend::clear_session();
  Sequential model({layers::Input({2}), layers::Dense(1)});
  model.compile({.optimizer = "sgd", .loss = "mae"});
  Tensor x = rand_input({20, 2}, 3), y = rand_input({20, 1}, 4);
  History h = model.fit(x, y, {.batch_size = 8, .epochs = 4, .verbose = 0, .validation_data = {x, y},
                               .validation_batch_size = 5, .validation_freq = 2});
  CHECK(h.history.at("loss").size() == 4);
  // Keras keeps only the epochs that ran validation in val_ series.
  CHECK(h.history.at("val_loss").size() == 2);
}

TEST_CASE("steps set the batch size, validation_data overrides validation_split, fit's batch_size skips a dataset",
          "[fit]") {
  backend::clear_session();
  random::set_seed(3);
  Sequential model({layers::Input({2}), layers::Dense(1)});
  model.compile({.optimizer = optimizers::SGD({.learning_rate = 0.1}), .loss = "mse"});
  Tensor x = rand_input({100, 2}, 3), y = rand_input({100, 1}, 4);
  // Keras's ArrayDataAdapter: no batch_size and `steps` give ceil(100 / 2) = 50 samples a batch, so two
  // steps see every sample (32 a batch would leave 36 out).
  CHECK(model.predict(x, {.verbose = 0, .steps = 2}).shape() == Shape{100, 1});
  CHECK(model.evaluate(x, y, {.verbose = 0, .steps = 2}).at("loss") ==
        Approx(model.evaluate(x, y, {.verbose = 0}).at("loss")).epsilon(1e-6));
  CHECK(model.evaluate(x, y, {.verbose = 0, .steps = 2}).at("loss") !=
        Approx(model.evaluate(x, y, {.batch_size = 32, .verbose = 0, .steps = 2}).at("loss")).epsilon(1e-6));
  const std::vector<Tensor> w0 = model.get_weights();
  auto trained = [&](FitOptions o) {
    model.set_weights(w0);
    o.verbose = 0;
    o.shuffle = false;
    History h = model.fit(x, y, o);
    return std::pair{model.get_weights()[0].to_vector<float>(), h};
  };
  const auto by_steps = trained({.steps_per_epoch = 2}).first;
  CHECK(by_steps == trained({.batch_size = 50, .steps_per_epoch = 2}).first);
  CHECK(by_steps != trained({.batch_size = 32, .steps_per_epoch = 2}).first);

  // validation_data wins over validation_split (Keras: the split applies only without validation_data):
  // training sees all 100 samples, and val_loss is the validation tensors' loss.
  Tensor xv = rand_input({10, 2}, 5), yv = rand_input({10, 1}, 6);
  const auto [w_split, h_split] = trained({.batch_size = 10, .validation_split = 0.5, .validation_data = {xv, yv}});
  CHECK(w_split == trained({.batch_size = 10}).first);
  CHECK(h_split.history.at("val_loss").back() == Approx(model.evaluate(xv, yv, {.verbose = 0}).at("loss")).epsilon(1e-6));
  model.set_weights(w0);

  // fit's batch_size batches the training tensors; a validation dataset is batched already and keeps its
  // batches. An explicit validation_batch_size for a dataset is still an error.
  auto val_ds = data::Dataset::from_tensor_slices({xv, yv}).batch(4);
  History h = model.fit(x, y, {.batch_size = 25, .verbose = 0, .validation_data = val_ds});
  CHECK(h.history.at("val_loss").back() == Approx(model.evaluate(val_ds, {.verbose = 0}).at("loss")).epsilon(1e-6));
  CHECK_THROWS_WITH(model.fit(x, y, {.verbose = 0, .validation_data = val_ds, .validation_batch_size = 4}),
                    Catch::Contains("already batched"));
  // With a dataset, validation_split alone is refused; with validation_data it is ignored, as in Keras.
  auto train_ds = data::Dataset::from_tensor_slices({x, y}).batch(25);
  CHECK_THROWS_WITH(model.fit(train_ds, {.verbose = 0, .validation_split = 0.2}), Catch::Contains("validation_split"));
  CHECK(model.fit(train_ds, {.verbose = 0, .validation_split = 0.2, .validation_data = val_ds})
            .history.count("val_loss") == 1);
}

TEST_CASE("sample_weight weighs each sample's loss", "[fit]") {
  backend::clear_session();
  Sequential model({layers::Input({2}), layers::Dense(1, {.kernel_initializer = "ones"})});
  model.compile({.optimizer = optimizers::SGD({.learning_rate = 0.0}), .loss = "mse", .metrics = {"mse"},
                 .weighted_metrics = {"mse"}});
  Tensor x = Tensor::from_vector<float>({1, 0, 0, 1, 1, 1, 0, 0}, {4, 2});
  Tensor y = ops::zeros({4, 1});
  Tensor sw = Tensor::from_vector<float>({1, 0, 2, 0});
  // predictions 1, 1, 2, 0; squared errors 1, 1, 4, 0; weighted sum 9 over 4 samples.
  History h = model.fit(x, y, {.batch_size = 4, .verbose = 0, .shuffle = false, .sample_weight = sw});
  CHECK(h.history.at("loss")[0] == Approx(9.0 / 4));
  CHECK(h.history.at("mse")[0] == Approx(6.0 / 4));  // metrics ignore the weights
  CHECK(h.history.at("weighted_mse")[0] == Approx(9.0 / 3));
  Logs l = model.test_on_batch(x, y, {.sample_weight = sw});
  CHECK(l.at("loss") == Approx(9.0 / 4));
  CHECK(model.evaluate(x, y, {.verbose = 0, .sample_weight = sw}).at("loss") == Approx(9.0 / 4));
}

TEST_CASE("predict batches any number of samples and runs in inference mode", "[fit]") {
  backend::clear_session();
  Sequential model({layers::Input({5}), layers::Dense(4, {.activation = "relu"}), layers::Dropout(0.5), layers::Dense(3)});
  Tensor x = rand_input({70, 5}, 7);
  Tensor direct = model(x);
  Tensor batched = model.predict(x, {.batch_size = 32, .verbose = 0});
  CHECK(batched.shape() == Shape{70, 3});
  check_close(batched, direct, 1e-6);
  check_close(model.predict(data::Dataset::from_tensor_slices(x).batch(9), {.verbose = 0}), direct, 1e-6);
  check_close(model.predict_on_batch(x), direct, 1e-6);
}

TEST_CASE("Dropout is active in fit only", "[fit]") {
  backend::clear_session();
  Sequential model({layers::Input({8}), layers::Dropout(0.5, {.seed = 1}), layers::Dense(1, {.kernel_initializer = "ones"})});
  model.compile({.optimizer = optimizers::SGD({.learning_rate = 0.0}), .loss = "mse"});
  Tensor x = ops::ones({16, 8}), y = ops::full({16, 1}, 8.0);
  CHECK(model.evaluate(x, y, {.verbose = 0}).at("loss") == Approx(0.0));
  CHECK(model.fit(x, y, {.verbose = 0}).history.at("loss")[0] > 1.0);
}

TEST_CASE("several outputs: per-output losses, loss_weights and metrics", "[fit]") {
  backend::clear_session();
  Tensor in = layers::Input({3});
  Tensor a = layers::Dense(2, {.name = "a"})(in);
  Tensor b = layers::Dense(1, {.name = "b"})(in);
  Model model(std::vector<Tensor>{in}, std::vector<Tensor>{a, b});
  model.compile({.optimizer = optimizers::SGD({.learning_rate = 0.0}), .loss = {"mse", "mae"},
                 .metrics = {"mae", "mae"}, .loss_weights = {1.0, 0.5}});
  Tensor x = rand_input({6, 3}, 9), ya = rand_input({6, 2}, 10), yb = rand_input({6, 1}, 11);
  Logs logs = model.test_on_batch({x}, {ya, yb});
  std::vector<std::string> keys;
  for (const auto& [k, v] : logs) keys.push_back(k);
  CHECK(keys == std::vector<std::string>{"loss", "a_loss", "b_loss", "a_mae", "b_mae"});
  std::vector<Tensor> pred = model.predict_outputs({x}, {.verbose = 0});
  const double mse = ops::reduce_mean(ops::square(pred[0] - ya)).item<float>();
  const double mae = ops::reduce_mean(ops::abs(pred[1] - yb)).item<float>();
  CHECK(logs.at("a_loss") == Approx(mse));
  CHECK(logs.at("b_loss") == Approx(mae));
  CHECK(logs.at("loss") == Approx(mse + 0.5 * mae));
  CHECK_THROWS_AS(model.predict(x), InvalidArgument);
  History h = model.fit({x}, {ya, yb}, {.batch_size = 3, .verbose = 0});
  CHECK(h.history.count("b_mae") == 1);

  // One loss for every output takes one weight, for all of them (Keras 3.15: loss="mse",
  // loss_weights=[0.5] gives 0.5 * (a_loss + b_loss); two weights for one loss are an error).
  model.compile({.optimizer = optimizers::SGD({.learning_rate = 0.0}), .loss = "mse", .loss_weights = {0.5}});
  Logs one = model.test_on_batch({x}, {ya, yb});
  CHECK(one.at("loss") == Approx(0.5 * (one.at("a_loss") + one.at("b_loss"))));
  CHECK_THROWS_WITH(model.compile({.loss = "mse", .loss_weights = {1.0, 0.5}}),
                    Catch::Contains("`loss_weights` must match the number of losses, got 1 losses and 2 weights"));
}

namespace {
// A custom train_step in the Keras pattern: tape, compute_loss, gradients, optimizer().apply, metrics.
struct HalfStepModel : Model {
  layers::Dense dense{1, {.kernel_initializer = "zeros"}};
  int steps = 0;
  Tensor call(const Tensor& x, bool training) override { return dense(x); }
  MetricResults train_step(const data::Element& batch) override {
    std::vector<Tensor> x, y;
    Tensor sw;
    unpack_batch(batch, x, y, sw);
    std::vector<Variable> vars = trainable_weights();
    GradientTape tape;
    std::vector<Tensor> y_pred = {(*this)(x[0], true)};
    Tensor loss = compute_loss(y, y_pred, sw);
    std::vector<Tensor> grads = tape.gradient(loss, std::vector<Tensor>(vars.begin(), vars.end()));
    for (Tensor& g : grads) g = g * 0.5f;
    optimizer().apply(grads, vars);
    ++steps;
    return compute_metrics(y, y_pred, sw, loss);
  }
};
}  // namespace

TEST_CASE("an overridden train_step drives fit", "[fit]") {
  backend::clear_session();
  HalfStepModel model;
  model.compile({.optimizer = optimizers::SGD({.learning_rate = 1.0}), .loss = "mse"});
  Tensor x = ops::ones({4, 1}), y = ops::full({4, 1}, 2.0);
  History h = model.fit(x, y, {.batch_size = 4, .epochs = 1, .verbose = 0});
  CHECK(model.steps == 1);
  CHECK(h.history.at("loss")[0] == Approx(4.0));
  // d/dw mean((w + b - 2)^2) = -4 at zero, halved and applied with lr 1: w = b = 2.
  CHECK(model.dense.get_weights()[0].to_vector<float>()[0] == Approx(2.0));
}

TEST_CASE("stop_training from a callback ends fit after the batch", "[fit]") {
  backend::clear_session();
  struct StopAt : callbacks::Callback {
    EMBER_CALLBACK(StopAt)
    int64_t batches = 0;
    void on_train_batch_end(int64_t batch, const Logs&) override {
      if (++batches == 2) model()->stop_training = true;
    }
  };
  Sequential model({layers::Input({2}), layers::Dense(1)});
  model.compile({.optimizer = "adam", .loss = "mse"});
  auto stop = std::make_shared<StopAt>();
  History h = model.fit(rand_input({40, 2}, 1), rand_input({40, 1}, 2),
                        {.batch_size = 4, .epochs = 5, .verbose = 0, .callbacks = {stop}});
  CHECK(stop->batches == 2);
  CHECK(h.epoch == std::vector<int>{0});
}

TEST_CASE("training errors say what to change", "[fit][errors]") {
  backend::clear_session();
  Sequential model({layers::Input({3}), layers::Dense(2)});
  Tensor x = rand_input({8, 3}, 1), y = rand_input({8, 2}, 2);
  auto message_of = [](auto&& f) {
    try {
      f();
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("no InvalidArgument");
  };
  CHECK_THAT(message_of([&] { model.fit(x, y, {.verbose = 0}); }), Catch::Contains("compile()"));
  CHECK_THAT(message_of([&] { model.compile({.loss = {"mse", "mae"}}); }), Catch::Contains("2 losses for a model with 1 output"));
  CHECK_THAT(message_of([&] { model.compile({.loss = "msee"}); }), Catch::Contains("msee"));
  model.compile({.optimizer = "sgd", .loss = "mse"});
  CHECK_THAT(message_of([&] { model.fit(x, rand_input({7, 2}, 3), {.verbose = 0}); }), Catch::Contains("7"));
  CHECK_THAT(message_of([&] { model.fit(x, rand_input({8, 5}, 3), {.verbose = 0}); }), Catch::Contains("(8, 5)"));
  CHECK_THAT(message_of([&] { model.fit(x, y, {.verbose = 0, .validation_split = 1.0}); }),
             Catch::Contains("validation_split"));
  CHECK_THAT(message_of([&] { model.fit(x, y, {.verbose = 0, .class_weight = {{0, 1.0}}, .sample_weight = ops::ones({8})}); }),
             Catch::Contains("not both"));
  auto ds = data::Dataset::from_tensor_slices({x, y}).batch(4);
  CHECK_THAT(message_of([&] { model.fit(ds, {.batch_size = 4, .verbose = 0}); }), Catch::Contains("already batched"));
  auto triple = data::Dataset::from_tensor_slices({x, y, y, y}).batch(4);
  CHECK_THAT(message_of([&] { model.fit(triple, {.verbose = 0}); }), Catch::Contains("4 tensors"));
}

TEST_CASE("a learning run on a Fashion-MNIST slice reaches a sensible accuracy", "[fit][learning]") {
  backend::clear_session();
  random::set_seed(1);
  auto [train, test] = datasets::fashion_mnist::load_data();
  auto prepare = [](const Tensor& images, int64_t n) {
    return ops::cast(ops::reshape(ops::slice(images, {0, 0, 0}, {n, -1, -1}), {n, 784}), DType::Float32) / 255.0f;
  };
  Tensor x = prepare(train.x, 4000), y = ops::slice(train.y, {0}, {4000});
  Tensor xt = prepare(test.x, 1000), yt = ops::slice(test.y, {0}, {1000});
  Sequential model({layers::Input({784}), layers::Dense(64, {.activation = "relu"}), layers::Dense(10)});
  model.compile({.optimizer = optimizers::Adam(),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
  History h = model.fit(x, y, {.batch_size = 64, .epochs = 3, .verbose = 0});
  CHECK(h.history.at("accuracy").back() > h.history.at("accuracy").front());
  Logs scores = model.evaluate(xt, yt, {.verbose = 0});
  CHECK(scores.at("accuracy") > 0.72);
}

namespace {
// A Keras-pattern custom step: tape.gradient of the optimizer's scale_loss of compute_loss, then optimizer().apply.
void custom_step(Model& model, const Tensor& x, const Tensor& y) {
  std::vector<Variable> vars = model.trainable_weights();
  GradientTape tape;
  std::vector<Tensor> y_pred = {model(x, true)};
  Tensor loss = model.optimizer().scale_loss(model.compute_loss({y}, y_pred, Tensor()));
  std::vector<Tensor> grads = tape.gradient(loss, std::vector<Tensor>(vars.begin(), vars.end()));
  model.optimizer().apply(grads, vars);
}

std::unique_ptr<Sequential> small_dense_model() {
  auto model = std::make_unique<Sequential>();
  model->add(layers::Input({12}));
  model->add(layers::Dense(40, {.activation = "relu"}));
  model->add(layers::Dense(4));
  return model;
}
}  // namespace

TEST_CASE("the default train_step gives a custom GradientTape step's bits at every batch size", "[fit]") {
  // At a batch of at most 8 the traced default step hands the Dense kernels' gradients to the update as their
  // factors (fold_kernel_gradients); every optimizer and option must still give the weights a custom eager step
  // gives, bit for bit.
  using OptimizerFactory = std::function<optimizers::OptimizerPtr()>;
  const std::vector<std::pair<std::string, OptimizerFactory>> optimizers_to_try = {
      {"Adam", [] { return optimizers::Adam().move_to_shared(); }},
      {"Adam clipnorm", [] { return optimizers::Adam({.clipnorm = 0.5}).move_to_shared(); }},
      {"Adam loss_scale_factor", [] { return optimizers::Adam({.loss_scale_factor = 4.0}).move_to_shared(); }},
      {"AdamW", [] { return optimizers::AdamW().move_to_shared(); }},
      {"SGD momentum", [] { return optimizers::SGD({.learning_rate = 0.05, .momentum = 0.9}).move_to_shared(); }},
  };
  for (const auto& [name, make_optimizer] : optimizers_to_try)
    for (int64_t batch : {1, 3, 8, 9}) {
      INFO(name << ", batch " << batch);
      backend::clear_session();
      auto fused = small_dense_model(), custom = small_dense_model();
      custom->set_weights(fused->get_weights());
      fused->compile({.optimizer = make_optimizer(), .loss = "mse"});
      custom->compile({.optimizer = make_optimizer(), .loss = "mse"});
      for (int step = 0; step < 3; ++step) {
        const Tensor x = rand_input({batch, 12}, 100 + step), y = rand_input({batch, 4}, 200 + step);
        fused->train_on_batch(x, y);
        custom_step(*custom, x, y);
      }
      const std::vector<Tensor> a = fused->get_weights(), b = custom->get_weights();
      REQUIRE(a.size() == b.size());
      for (size_t i = 0; i < a.size(); ++i) {
        INFO("weight " << i);
        CHECK(a[i].to_vector<float>() == b[i].to_vector<float>());
      }
    }
}

namespace {
// The message of the E that f throws (a failed check when it throws nothing).
template <class E, class F>
std::string error_message(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  FAIL("expected an exception");
  return {};
}
}  // namespace

TEST_CASE("a loss that refuses a batch says the shapes are per batch and what differs", "[fit]") {
  backend::clear_session();
  Tensor in = layers::Input({4});
  Model model(in, layers::Dense(10, {.activation = "softmax", .name = "probs"})(in));
  model.compile({.optimizer = "sgd", .loss = "sparse_categorical_crossentropy"});
  // One-hot targets for a sparse loss: same shape, same dtype, still wrong.
  Tensor x = rand_input({32, 4}, 1);
  Tensor one_hot = ops::one_hot(Tensor::from_vector<int32_t>(std::vector<int32_t>(32, 3), {32}), 10);
  const std::string m = error_message<InvalidArgument>([&] { model.fit(x, one_hot, {.batch_size = 8, .verbose = 0}); });
  CHECK_THAT(m, Catch::Contains("loss 'sparse_categorical_crossentropy' for output 'probs' failed on a batch") &&
                    Catch::Contains("targets have shape (None, 10) and dtype float32") &&
                    Catch::Contains("(None: the batch size)") &&
                    Catch::Contains("shapes and dtypes agree"));
  // Integer class ids against a loss that wants one-hot targets of the output's dtype: the dtypes differ.
  model.compile({.optimizer = "sgd", .loss = "categorical_crossentropy"});
  Tensor ids = Tensor::from_vector<int32_t>(std::vector<int32_t>(32, 3), {32});
  const std::string d = error_message<InvalidArgument>([&] { model.fit(x, ids, {.batch_size = 8, .verbose = 0}); });
  CHECK_THAT(d, Catch::Contains("their shapes differ and their dtypes differ (int32 vs float32)"));
}

TEST_CASE("an unbatched dataset's shape error suggests .batch()", "[fit]") {
  backend::clear_session();
  Sequential model({layers::Input({28, 28}), layers::Flatten(), layers::Dense(10)});
  model.compile({.optimizer = "sgd", .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
  Tensor x = rand_input({6, 28, 28}, 2);
  Tensor y = Tensor::from_vector<int32_t>({0, 1, 2, 3, 4, 5}, {6});
  auto ds = data::Dataset::from_tensor_slices({x, y});
  const std::string m = error_message<InvalidArgument>([&] { model.fit(ds, {.verbose = 0}); });
  CHECK_THAT(m, Catch::Contains("expects shape (None, 28, 28), got (28, 28)") && Catch::Contains(".batch(batch_size)"));
  // A batched one trains; a wrong shape that is not a missing batch axis does not suggest it.
  model.fit(ds.batch(3), {.verbose = 0});
  const std::string other = error_message<InvalidArgument>([&] { model.predict(rand_input({2, 28, 27}, 3), {.verbose = 0}); });
  CHECK_THAT(other, !Catch::Contains(".batch("));
}
