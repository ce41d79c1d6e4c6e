// compile's steps_per_execution: several steps per call of one traced function, the batch hooks once per
// call, and the same numbers as one step per call.
#include <catch2/catch.hpp>

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

struct Data {
  Tensor x, y;
};
Data data_of(int64_t n) {
  Tensor x = random::uniform({n, 12}, {.seed = 3});
  std::vector<int32_t> y(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) y[static_cast<size_t>(i)] = static_cast<int32_t>((i * 7) % 4);
  return {x, Tensor::from_vector<int32_t>(y)};
}

void compile(Sequential& m, int steps_per_execution, bool run_eagerly = false) {
  m.compile({.optimizer = optimizers::Adam({.learning_rate = 1e-2}),
             .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
             .metrics = {"accuracy"},
             .run_eagerly = run_eagerly,
             .steps_per_execution = steps_per_execution});
}

// Every batch hook, as "<hook> <batch>", and the logs at each train batch end.
struct Recorder : callbacks::Callback {
  EMBER_CALLBACK(Recorder)
  std::vector<std::string> events;
  std::map<int64_t, Logs> train_end_logs;
  void on_epoch_begin(int epoch, const Logs&) override { events.push_back("epoch " + std::to_string(epoch)); }
  void on_train_batch_begin(int64_t b, const Logs&) override { add("train_begin", b); }
  void on_train_batch_end(int64_t b, const Logs& logs) override {
    add("train_end", b);
    train_end_logs[b] = logs;
  }
  void on_test_batch_begin(int64_t b, const Logs&) override { add("test_begin", b); }
  void on_test_batch_end(int64_t b, const Logs&) override { add("test_end", b); }
  void on_predict_batch_begin(int64_t b, const Logs&) override { add("predict_begin", b); }
  void on_predict_batch_end(int64_t b, const Logs&) override { add("predict_end", b); }
  void add(const char* hook, int64_t b) { events.push_back(std::string(hook) + " " + std::to_string(b)); }
};

std::vector<std::string> hooks(const char* what, const std::vector<std::pair<int64_t, int64_t>>& executions) {
  std::vector<std::string> out;
  for (const auto& [first, last] : executions) {
    out.push_back(std::string(what) + "_begin " + std::to_string(first));
    out.push_back(std::string(what) + "_end " + std::to_string(last));
  }
  return out;
}

}  // namespace

TEST_CASE("steps_per_execution gives the History, weights, evaluation and predictions of one step per call",
          "[fit][function]") {
  // 62 samples, 49 for training at batch 8: 7 batches (the last of 1 sample), so executions of 4 and 3
  // steps; 13 for validation: 2 batches, one execution. Not a multiple of 4 * 8 anywhere.
  const Data d = data_of(62);
  for (const bool eagerly : {false, true}) {
    INFO("run_eagerly " << eagerly);
    std::vector<History> histories;
    std::vector<std::vector<Tensor>> weights;
    std::vector<Logs> scores;
    std::vector<std::vector<float>> predictions;
    for (const int spe : {1, 4}) {
      auto m = mlp();
      compile(*m, spe, eagerly);
      random::set_seed(99);  // the same shuffles and dropout masks either way
      histories.push_back(m->fit(d.x, d.y, {.batch_size = 8, .epochs = 3, .verbose = 0, .validation_split = 0.2}));
      weights.push_back(m->get_weights());
      scores.push_back(m->evaluate(d.x, d.y, {.batch_size = 8, .verbose = 0}));
      predictions.push_back(m->predict(d.x, {.batch_size = 8, .verbose = 0}).to_vector<float>());
      if (!eagerly && spe == 4) {
        // The traced functions: one per group shape (4 full batches; 2 full and the one of 1 sample).
        CHECK(detail::traced_train_functions(*m).size() == 2);
        CHECK(m->get_compile_config().at("steps_per_execution") == 4);
      }
    }
    REQUIRE(histories[0].history.size() == histories[1].history.size());
    for (const auto& [name, values] : histories[0].history) {
      INFO(name);
      CHECK(histories[1].history.at(name) == values);
    }
    REQUIRE(weights[0].size() == weights[1].size());
    for (size_t i = 0; i < weights[0].size(); ++i)
      CHECK(weights[0][i].to_vector<float>() == weights[1][i].to_vector<float>());
    CHECK(scores[0] == scores[1]);
    CHECK(predictions[0] == predictions[1]);
  }
}

TEST_CASE("steps_per_execution with gradient accumulation: each step reads the weights the last one wrote",
          "[fit][function]") {
  // The accumulating optimizer writes the weights on every 3rd call only: a step after such a call in the
  // same execution must read them anew, also where the traced call did not write them.
  Tensor x = Tensor::from_vector<float>({1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1, 1, 0, 1, 0, 1, 1, 2, 1, 0}, {7, 3});
  Tensor y = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7}, {7, 1});
  std::vector<std::vector<float>> kernels;
  std::vector<std::vector<double>> losses;
  for (const auto& [eagerly, spe] : std::vector<std::pair<bool, int>>{{true, 1}, {false, 1}, {false, 2}, {false, 4}}) {
    Sequential m({layers::Input({3}), layers::Dense(1, {.kernel_initializer = "ones"})});
    m.compile({.optimizer = optimizers::SGD({.learning_rate = 0.1, .gradient_accumulation_steps = 3}),
               .loss = "mse",
               .run_eagerly = eagerly,
               .steps_per_execution = spe});
    History h = m.fit(x, y, {.batch_size = 1, .epochs = 2, .verbose = 0, .shuffle = false});
    kernels.push_back(m.get_weights()[0].to_vector<float>());
    losses.push_back(h.history.at("loss"));
  }
  for (size_t i = 1; i < kernels.size(); ++i) {
    INFO("run " << i);
    CHECK(kernels[i] == kernels[0]);
    CHECK(losses[i] == losses[0]);
  }
  CHECK(kernels[0] != std::vector<float>{1, 1, 1});
}

TEST_CASE("steps_per_execution calls the batch hooks once per execution, as Keras 3 does", "[fit][callbacks]") {
  // 74 samples at batch 8: 10 batches (the last of 2), so executions of steps 0-3, 4-7 and 8-9.
  const Data d = data_of(74);
  const std::vector<std::pair<int64_t, int64_t>> executions{{0, 3}, {4, 7}, {8, 9}};
  for (const bool eagerly : {false, true}) {
    INFO("run_eagerly " << eagerly);
    auto grouped = mlp(), single = mlp();
    compile(*grouped, 4, eagerly);
    compile(*single, 1, eagerly);
    auto rec = std::make_shared<Recorder>(), rec1 = std::make_shared<Recorder>();
    random::set_seed(5);
    grouped->fit(d.x, d.y, {.batch_size = 8, .epochs = 2, .verbose = 0, .callbacks = {rec}, .shuffle = false});
    random::set_seed(5);
    single->fit(d.x, d.y, {.batch_size = 8, .epochs = 2, .verbose = 0, .callbacks = {rec1}, .shuffle = false});

    std::vector<std::string> expected{"epoch 0"};
    for (const auto& e : hooks("train", executions)) expected.push_back(e);
    expected.push_back("epoch 1");
    for (const auto& e : hooks("train", executions)) expected.push_back(e);
    CHECK(rec->events == expected);
    // The logs at the end of an execution are the metrics after its last step.
    for (const auto& [batch, logs] : rec->train_end_logs) {
      INFO("batch " << batch);
      CHECK(logs == rec1->train_end_logs.at(batch));
    }
    CHECK(rec->params().steps == 10);

    rec->events.clear();
    grouped->evaluate(d.x, d.y, {.batch_size = 8, .verbose = 0, .callbacks = {rec}});
    CHECK(rec->events == hooks("test", executions));

    rec->events.clear();
    grouped->predict(d.x, {.batch_size = 8, .verbose = 0, .callbacks = {rec}});
    CHECK(rec->events == hooks("predict", executions));

    // steps_per_epoch caps the last execution: 6 steps are executions of 4 and 2.
    rec->events.clear();
    grouped->fit(d.x, d.y, {.batch_size = 8, .epochs = 1, .verbose = 0, .callbacks = {rec}, .steps_per_epoch = 6});
    std::vector<std::string> capped{"epoch 0"};
    for (const auto& e : hooks("train", {{0, 3}, {4, 5}})) capped.push_back(e);
    CHECK(rec->events == capped);
    CHECK(grouped->optimizer().iterations().value().item<int64_t>() == 2 * 10 + 6);
  }
}

TEST_CASE("steps_per_execution larger than an epoch runs the epoch in one execution", "[fit]") {
  const Data d = data_of(20);
  auto m = mlp();
  compile(*m, 100);
  auto rec = std::make_shared<Recorder>();
  m->fit(d.x, d.y, {.batch_size = 8, .epochs = 1, .verbose = 0, .callbacks = {rec}});
  CHECK(rec->events == std::vector<std::string>{"epoch 0", "train_begin 0", "train_end 2"});
  CHECK(m->optimizer().iterations().value().item<int64_t>() == 3);
}

TEST_CASE("compile refuses a steps_per_execution below 1 and an unknown jit_compile", "[fit]") {
  auto m = mlp();
  for (const int bad : {0, -2}) {
    INFO(bad);
    try {
      m->compile({.optimizer = "sgd", .loss = "mse", .steps_per_execution = bad});
      FAIL("no error");
    } catch (const InvalidArgument& e) {
      const std::string what = e.what();
      CHECK_THAT(what, Catch::Contains("compile") && Catch::Contains("steps_per_execution") &&
                           Catch::Contains("got " + std::to_string(bad)));
    }
  }
  CHECK_NOTHROW(m->compile({.optimizer = "sgd", .loss = "mse", .jit_compile = true}));
  CHECK_THROWS_AS(m->compile({.optimizer = "sgd", .loss = "mse", .jit_compile = "xla"}), InvalidArgument);
  CHECK_NOTHROW(m->compile({.optimizer = "sgd", .loss = "mse", .jit_compile = false}));
  CHECK_NOTHROW(m->compile({.optimizer = "sgd", .loss = "mse", .jit_compile = "auto", .run_eagerly = false,
                            .steps_per_execution = 8}));
}

TEST_CASE("the compile config keeps steps_per_execution", "[fit][config]") {
  auto m = mlp();
  compile(*m, 4);
  const nlohmann::json cc = m->get_compile_config();
  CHECK(cc.at("steps_per_execution") == 4);
  CHECK(cc.at("jit_compile") == false);  // "auto" as compile resolved it, without an accelerator
  auto m2 = mlp();
  m2->compile_from_config(cc);
  CHECK(m2->get_compile_config() == cc);
  CHECK(detail::steps_per_execution(*m2) == 4);

  // Saved by Keras where it compiled with XLA: loads, and fuses.
  nlohmann::json xla = cc;
  xla["jit_compile"] = true;
  auto m3 = mlp();
  m3->compile_from_config(xla);
  CHECK(m3->get_compile_config().at("jit_compile") == true);
  xla["jit_compile"] = "xla";
  CHECK_THROWS_AS(mlp()->compile_from_config(xla), InvalidArgument);

  nlohmann::json bad = cc;
  bad["steps_per_execution"] = 0;
  CHECK_THROWS_AS(mlp()->compile_from_config(bad), InvalidArgument);
  bad["steps_per_execution"] = "4";
  CHECK_THROWS_AS(mlp()->compile_from_config(bad), InvalidArgument);
}

TEST_CASE("steps_per_execution under mixed_float16 (a loss-scale optimizer) gives one step per call's weights",
          "[fit][mixed_precision]") {
  const Data d = data_of(50);
  std::vector<std::vector<Tensor>> weights;
  std::vector<History> histories;
  for (const int spe : {1, 3}) {
    mixed_precision::set_global_policy("mixed_float16");
    auto m = mlp();
    compile(*m, spe);
    random::set_seed(99);
    histories.push_back(m->fit(d.x, d.y, {.batch_size = 8, .epochs = 2, .verbose = 0}));
    weights.push_back(m->get_weights());
    mixed_precision::set_global_policy("float32");
  }
  CHECK(histories[0].history == histories[1].history);
  REQUIRE(weights[0].size() == weights[1].size());
  for (size_t i = 0; i < weights[0].size(); ++i)
    CHECK(weights[0][i].to_vector<float>() == weights[1][i].to_vector<float>());
}
