// compile's metrics on models with several outputs, as Keras 3.15's CompileMetrics matches them: a list
// with one entry per output, a map by output name, a flat list read as one entry per output; and the
// mistakes it refuses.
#include <catch2/catch.hpp>

#include "framework/ember.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using Catch::Contains;

namespace {

// Input(3) -> "cls" Dense(3) softmax and "reg" Dense(1), the regression head a newcomer's model has.
Model two_heads() {
  backend::clear_session();
  Tensor in = layers::Input({3});
  Tensor cls = layers::Dense(3, {.activation = "softmax", .name = "cls"})(in);
  Tensor reg = layers::Dense(1, {.name = "reg"})(in);
  return Model(in, {cls, reg});
}

std::vector<std::string> keys_of(const Logs& logs) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : logs) keys.push_back(k);
  return keys;
}

struct Batch {
  Tensor x = random::uniform({8, 3}, {.seed = 1});
  Tensor y_cls = Tensor::from_vector<float>({0, 1, 2, 0, 1, 2, 0, 1}, {8});
  Tensor y_reg = random::uniform({8, 1}, {.seed = 2});
};

}  // namespace

TEST_CASE("compile metrics: one list per output, Keras 3's <output>_<metric> names", "[fit][metrics]") {
  Model model = two_heads();
  Batch b;
  model.compile({.optimizer = "sgd", .loss = {"sparse_categorical_crossentropy", "mse"},
                 .metrics = {{"accuracy"}, {"mae", metrics::RootMeanSquaredError()}}});
  Logs logs = model.test_on_batch({b.x}, {b.y_cls, b.y_reg});
  CHECK(keys_of(logs) == std::vector<std::string>{"loss", "cls_loss", "reg_loss", "cls_accuracy", "reg_mae",
                                                  "reg_root_mean_squared_error"});
  std::vector<Tensor> pred = model.predict_outputs({b.x}, {.verbose = 0});
  CHECK(logs.at("reg_mae") == Approx(ops::reduce_mean(ops::abs(pred[1] - b.y_reg)).item<float>()));
  const Tensor hits = ops::cast(ops::equal(ops::cast(ops::argmax(pred[0], -1), DType::Float32), b.y_cls), DType::Float32);
  CHECK(logs.at("cls_accuracy") == Approx(ops::reduce_mean(hits).item<float>()));

  // {} gives an output no metrics; the compile config keeps the structure, as Keras's get_compile_config.
  model.compile({.optimizer = "sgd", .loss = {"sparse_categorical_crossentropy", "mse"}, .metrics = {{}, {"mae"}}});
  CHECK(keys_of(model.test_on_batch({b.x}, {b.y_cls, b.y_reg})) ==
        std::vector<std::string>{"loss", "cls_loss", "reg_loss", "reg_mae"});
  CHECK(model.get_compile_config()["metrics"] == nlohmann::json::parse(R"([[], ["mae"]])"));
}

TEST_CASE("compile metrics: a flat list on several outputs is one entry per output (Keras 3.15)", "[fit][metrics]") {
  Model model = two_heads();
  Batch b;
  model.compile({.optimizer = "sgd", .loss = {"sparse_categorical_crossentropy", "mse"}, .metrics = {"accuracy", "mae"}});
  CHECK(keys_of(model.test_on_batch({b.x}, {b.y_cls, b.y_reg})) ==
        std::vector<std::string>{"loss", "cls_loss", "reg_loss", "cls_accuracy", "reg_mae"});
  // One metric "for every output" is a list of the wrong length: refused, naming the outputs.
  const auto wrong = [&](MetricsSpec metrics) {
    model.compile({.optimizer = "sgd", .loss = {"sparse_categorical_crossentropy", "mse"}, .metrics = std::move(metrics)});
  };
  CHECK_THROWS_AS(wrong({"accuracy"}), InvalidArgument);
  CHECK_THROWS_WITH(wrong({"accuracy"}), Contains("`metrics` has 1 entry but the model has 2 outputs ('cls', 'reg')") &&
                                             Contains("MetricsByOutput"));
  CHECK_THROWS_WITH(wrong({{"accuracy"}, {"mae"}, {"mse"}}), Contains("has 3 entries but the model has 2 outputs"));
  CHECK_THROWS_WITH(
      model.compile({.loss = "mse", .weighted_metrics = {"mae"}}),
      Contains("`weighted_metrics` has 1 entry"));
}

TEST_CASE("compile metrics: a map by output name", "[fit][metrics]") {
  Model model = two_heads();
  Batch b;
  model.compile({.optimizer = "sgd", .loss = {"sparse_categorical_crossentropy", "mse"},
                 .metrics = MetricsByOutput{{"reg", {"mae", "mse"}}},
                 .weighted_metrics = MetricsByOutput{{"cls", "accuracy"}}});
  CHECK(keys_of(model.test_on_batch({b.x}, {b.y_cls, b.y_reg})) ==
        std::vector<std::string>{"loss", "cls_loss", "reg_loss", "reg_mae", "reg_mse", "cls_accuracy"});
  const nlohmann::json cc = model.get_compile_config();
  CHECK(cc["metrics"] == nlohmann::json::parse(R"({"reg": ["mae", "mse"]})"));
  CHECK(cc["weighted_metrics"] == nlohmann::json::parse(R"({"cls": "accuracy"})"));
  // The config compiles a model again to the same metrics.
  Model again = two_heads();
  again.compile_from_config(cc);
  CHECK(keys_of(again.test_on_batch({b.x}, {b.y_cls, b.y_reg})) ==
        std::vector<std::string>{"loss", "cls_loss", "reg_loss", "reg_mae", "reg_mse", "cls_accuracy"});

  CHECK_THROWS_WITH(model.compile({.loss = "mse", .metrics = MetricsByOutput{{"regression", {"mae"}}}}),
                    Contains("`metrics` names output 'regression', but the model's outputs are 'cls', 'reg'"));
}

TEST_CASE("compile metrics: one output takes every metric however it is nested, unprefixed", "[fit][metrics]") {
  backend::clear_session();
  Tensor in = layers::Input({3});
  Model model(in, layers::Dense(1, {.name = "out"})(in));
  Batch b;
  model.compile({.optimizer = "sgd", .loss = "mse", .metrics = {{"mae"}, "mse"}});
  CHECK(keys_of(model.test_on_batch(b.x, b.y_reg)) == std::vector<std::string>{"loss", "mae", "mse"});
  model.compile({.optimizer = "sgd", .loss = "mse", .metrics = MetricsByOutput{{"out", {"mae"}}}});
  CHECK(keys_of(model.test_on_batch(b.x, b.y_reg)) == std::vector<std::string>{"loss", "mae"});
  CHECK_THROWS_AS(model.compile({.loss = "mse", .metrics = MetricsByOutput{{"dense", {"mae"}}}}), InvalidArgument);
}

TEST_CASE("compile metrics: a saved config that matches no output fails at the first step, as in Keras 3", "[fit][metrics]") {
  Model model = two_heads();
  Batch b;
  // Keras 3 writes what compile was given; metrics=["accuracy"] on two outputs compiles and fails at evaluate.
  model.compile_from_config(nlohmann::json::parse(
      R"({"optimizer": "sgd", "loss": ["sparse_categorical_crossentropy", "mse"], "metrics": ["accuracy"]})"));
  REQUIRE(model.compiled());
  CHECK(model.get_compile_config()["metrics"] == nlohmann::json::parse(R"(["accuracy"])"));
  CHECK_THROWS_WITH(model.test_on_batch({b.x}, {b.y_cls, b.y_reg}),
                    Contains("has 1 entry but the model has 2 outputs") && Contains("compile it again"));
}
