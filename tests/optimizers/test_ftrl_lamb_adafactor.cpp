// Ftrl, Lamb and Adafactor beyond the golden steps (test_optimizer_golden.cpp): Keras's argument errors,
// configs as Keras writes them, optimizers::get/deserialize, Adafactor's slot layout and its checkpoint.
#include <catch2/catch.hpp>

#include "framework/ember.h"
#include "framework/io/hdf5_file.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using namespace ember::testing;
using namespace ember::optimizers;
using nlohmann::json;

namespace {

std::vector<std::string> names(const std::vector<Variable>& vars) {
  std::vector<std::string> out;
  for (const Variable& v : vars) out.push_back(v.name());
  return out;
}

// The base keys of a Keras 3.15 optimizer config with default options.
json keras_base_config(const std::string& name) {
  return {{"name", name},
          {"learning_rate", 0.0010000000474974513},
          {"weight_decay", nullptr},
          {"clipnorm", nullptr},
          {"global_clipnorm", nullptr},
          {"clipvalue", nullptr},
          {"use_ema", false},
          {"ema_momentum", 0.99},
          {"ema_overwrite_frequency", nullptr},
          {"loss_scale_factor", nullptr},
          {"gradient_accumulation_steps", nullptr}};
}

}  // namespace

TEST_CASE("Ftrl: argument errors as Keras raises them", "[optimizers][errors]") {
  CHECK_THROWS_WITH(Ftrl({.initial_accumulator_value = -0.1}),
                    "Ftrl: `initial_accumulator_value` needs to be positive or zero. "
                    "Received: initial_accumulator_value=-0.1.");
  CHECK_THROWS_WITH(Ftrl({.learning_rate_power = 0.5}),
                    "Ftrl: `learning_rate_power` needs to be negative or zero. Received: learning_rate_power=0.5.");
  CHECK_THROWS_WITH(Ftrl({.l1_regularization_strength = -1.0}),
                    "Ftrl: `l1_regularization_strength` needs to be positive or zero. "
                    "Received: l1_regularization_strength=-1.0.");
  CHECK_THROWS_WITH(Ftrl({.l2_regularization_strength = -2.0}),
                    "Ftrl: `l2_regularization_strength` needs to be positive or zero. "
                    "Received: l2_regularization_strength=-2.0.");
  CHECK_THROWS_WITH(Ftrl({.l2_shrinkage_regularization_strength = -0.5}),
                    "Ftrl: `l2_shrinkage_regularization_strength` needs to be positive or zero. "
                    "Received: l2_shrinkage_regularization_strength=-0.5.");
  CHECK_THROWS_AS(Ftrl({.l1_regularization_strength = -1e-9}), InvalidArgument);
  // The boundaries are allowed, and Keras checks nothing about beta.
  CHECK_NOTHROW(Ftrl({.learning_rate_power = 0.0, .initial_accumulator_value = 0.0, .l1_regularization_strength = 0.0,
                      .l2_regularization_strength = 0.0, .l2_shrinkage_regularization_strength = 0.0}));
  CHECK_NOTHROW(Ftrl({.beta = -1.0}));
  // The base checks still run.
  CHECK_THROWS_WITH(Ftrl({.clipnorm = 1.0, .clipvalue = 1.0}), Catch::Contains("Only one of `clipnorm`"));
  // from_config validates as the constructor does.
  json bad = serialize(Ftrl());
  bad["config"]["learning_rate_power"] = 1.0;
  CHECK_THROWS_WITH(deserialize(bad), Catch::Contains("Received: learning_rate_power=1.0."));
}

TEST_CASE("Lamb and Adafactor accept what Keras accepts, and check the base options", "[optimizers][errors]") {
  // Keras validates none of their own hyperparameters.
  CHECK_NOTHROW(Lamb({.beta_1 = 2.0, .epsilon = -1.0}));
  CHECK_NOTHROW(Adafactor({.epsilon_2 = -1.0, .clip_threshold = 0.0}));
  CHECK_THROWS_WITH(Lamb({.use_ema = true, .ema_momentum = 1.5}), Catch::Contains("Lamb: `ema_momentum`"));
  CHECK_THROWS_WITH(Adafactor({.gradient_accumulation_steps = 1}),
                    Catch::Contains("Adafactor: `gradient_accumulation_steps` must be an integer >= 2"));
}

TEST_CASE("Ftrl, Lamb and Adafactor: default configs are Keras's", "[optimizers]") {
  backend::clear_session();
  json ftrl = keras_base_config("ftrl");
  ftrl.update({{"learning_rate_power", -0.5},
               {"initial_accumulator_value", 0.1},
               {"l1_regularization_strength", 0.0},
               {"l2_regularization_strength", 0.0},
               {"l2_shrinkage_regularization_strength", 0.0},
               {"beta", 0.0}});
  CHECK(Ftrl().get_config() == ftrl);
  json lamb = keras_base_config("lamb");
  lamb.update({{"beta_1", 0.9}, {"beta_2", 0.999}, {"epsilon", 1e-07}});
  CHECK(Lamb().get_config() == lamb);
  json adafactor = keras_base_config("adafactor");
  adafactor.update({{"beta_2_decay", -0.8},
                    {"epsilon_1", 1e-30},
                    {"epsilon_2", 0.001},
                    {"clip_threshold", 1.0},
                    {"relative_step", true}});
  CHECK(Adafactor().get_config() == adafactor);
  CHECK(Ftrl().name() == "ftrl_1");  // auto-named per class, as the others
}

TEST_CASE("optimizers::get and deserialize know Ftrl, Lamb and Adafactor", "[optimizers]") {
  for (const auto& [id, cls] : std::vector<std::pair<std::string, std::string>>{
           {"ftrl", "Ftrl"}, {"FTRL", "Ftrl"}, {"lamb", "Lamb"}, {"LAMB", "Lamb"}, {"adafactor", "Adafactor"},
           {"Adafactor", "Adafactor"}}) {
    INFO(id);
    CHECK(get(id)->class_name() == cls);
  }
  const std::vector<std::string> known = registered_optimizers();
  for (const std::string cls : {"Ftrl", "Lamb", "Adafactor"})
    CHECK(std::find(known.begin(), known.end(), cls) != known.end());

  // keras.saving.serialize_keras_object of each, as Keras 3.15.1 writes them (custom options).
  json ftrl = json::parse(R"({"module": "keras.optimizers", "class_name": "Ftrl", "config": {"name": "ftrl_7",
      "learning_rate": 0.10000000149011612, "weight_decay": null, "clipnorm": 0.5, "global_clipnorm": null,
      "clipvalue": null, "use_ema": false, "ema_momentum": 0.99, "ema_overwrite_frequency": null,
      "loss_scale_factor": null, "gradient_accumulation_steps": null, "learning_rate_power": -0.7,
      "initial_accumulator_value": 0.5, "l1_regularization_strength": 0.05, "l2_regularization_strength": 0.2,
      "l2_shrinkage_regularization_strength": 0.1, "beta": 0.3}, "registered_name": null})");
  json lamb = json::parse(R"({"module": "keras.optimizers", "class_name": "Lamb", "config": {"name": "lamb",
      "learning_rate": 0.5, "weight_decay": null, "clipnorm": null, "global_clipnorm": null, "clipvalue": null,
      "use_ema": true, "ema_momentum": 0.9, "ema_overwrite_frequency": null, "loss_scale_factor": null,
      "gradient_accumulation_steps": 2, "beta_1": 0.8, "beta_2": 0.95, "epsilon": 0.001}, "registered_name": null})");
  json adafactor = json::parse(R"({"module": "keras.optimizers", "class_name": "Adafactor", "config": {
      "name": "adafactor_2", "learning_rate": {"module": "keras.optimizers.schedules", "class_name":
      "ExponentialDecay", "config": {"initial_learning_rate": 0.9, "decay_steps": 1, "decay_rate": 0.5,
      "staircase": false, "name": "ExponentialDecay"}, "registered_name": null}, "weight_decay": 0.1,
      "clipnorm": null, "global_clipnorm": null, "clipvalue": null, "use_ema": false, "ema_momentum": 0.99,
      "ema_overwrite_frequency": null, "loss_scale_factor": null, "gradient_accumulation_steps": null,
      "beta_2_decay": -0.5, "epsilon_1": 1e-20, "epsilon_2": 0.01, "clip_threshold": 0.5,
      "relative_step": false}, "registered_name": null})");
  for (const json& j : {ftrl, lamb, adafactor}) {
    INFO(j["class_name"]);
    OptimizerPtr opt = deserialize(j);
    CHECK(opt->class_name() == j["class_name"]);
    CHECK(opt->get_config() == j["config"]);
    CHECK(serialize(*opt) == j);
    CHECK(deserialize(serialize(*opt))->get_config() == j["config"]);
  }
  CHECK(deserialize(adafactor)->learning_rate_schedule() != nullptr);

  json bad = adafactor;
  bad["config"]["beta_1"] = 0.9;
  CHECK_THROWS_WITH(deserialize(bad), Catch::Contains("Adafactor.from_config: unknown config key \"beta_1\""));
  bad = adafactor;
  bad["config"]["relative_step"] = 1;
  CHECK_THROWS_WITH(deserialize(bad), Catch::Contains("'relative_step' must be a boolean"));
  bad = ftrl;
  bad["config"]["amsgrad"] = false;
  CHECK_THROWS_WITH(deserialize(bad), Catch::Contains("Ftrl.from_config: unknown config key \"amsgrad\""));
  // Keys left out take the class defaults.
  const OptimizerPtr partial = deserialize({{"class_name", "Ftrl"}, {"config", {{"beta", 0.5}}}});
  CHECK(partial->get_config()["learning_rate_power"] == -0.5);
}

TEST_CASE("Ftrl and Lamb: slot names and order", "[optimizers]") {
  Variable k(ops::ones({2, 3}), {.name = "dense/kernel"}), b(ops::ones({3}), {.name = "dense/bias"});
  Ftrl ftrl({.initial_accumulator_value = 0.25, .name = "ftrl"});
  ftrl.build({k, b});
  CHECK(names(ftrl.variables()) == std::vector<std::string>{"ftrl/iteration", "ftrl/learning_rate",
                                                            "ftrl/dense_kernel_accumulator", "ftrl/dense_kernel_linear",
                                                            "ftrl/dense_bias_accumulator", "ftrl/dense_bias_linear"});
  CHECK(values_as_double(ftrl.variables()[2].value()) == std::vector<double>(6, 0.25));
  CHECK(values_as_double(ftrl.variables()[3].value()) == std::vector<double>(6, 0.0));
  Lamb lamb({.name = "lamb"});
  lamb.build({k, b});
  CHECK(names(lamb.variables()) == std::vector<std::string>{"lamb/iteration", "lamb/learning_rate",
                                                            "lamb/dense_kernel_momentum", "lamb/dense_kernel_velocity",
                                                            "lamb/dense_bias_momentum", "lamb/dense_bias_velocity"});
}

TEST_CASE("Adafactor: factored slots named after the variable, int32 placeholders below rank 2", "[optimizers]") {
  // The layout Keras 3.15.1 builds for a Dense layer's kernel (2, 3) and bias (3,), EMA averages first.
  Variable k(ops::ones({2, 3}), {.name = "dense/kernel"}), b(ops::ones({3}), {.name = "dense/bias"});
  Adafactor opt({.use_ema = true, .name = "adafactor"});
  opt.build({k, b});
  const std::vector<Variable> vars = opt.variables();
  CHECK(names(vars) == std::vector<std::string>{"adafactor/iteration", "adafactor/learning_rate",
                                                "adafactor/dense_kernel_average", "adafactor/dense_bias_average",
                                                "adafactor/kernel", "adafactor/kernel",
                                                "adafactor/dense_kernel_velocity", "adafactor/bias", "adafactor/bias",
                                                "adafactor/dense_bias_velocity"});
  CHECK(vars[4].shape() == Shape{2});
  CHECK(vars[5].shape() == Shape{3});
  CHECK(vars[6].shape() == Shape{2, 3});
  for (size_t i : {7, 8}) {
    CHECK(vars[i].dtype() == DType::Int32);
    CHECK(vars[i].shape() == Shape{});
    CHECK_FALSE(vars[i].trainable());
  }
  // A step leaves the placeholders at zero and keeps the bias's velocity unfactored.
  opt.apply({ops::full({2, 3}, 0.5), ops::full({3}, -0.25)}, {k, b});
  CHECK(opt.variables()[7].value().item<int32_t>() == 0);
  CHECK(values_as_double(opt.variables()[9].value())[0] > 0);
}

TEST_CASE("Adafactor's checkpoint holds its int32 placeholders where Keras's does", "[optimizers][io]") {
  TempDir dir("adafactor_state");
  auto model = std::make_shared<Sequential>(
      std::vector<SequentialEntry>{layers::Input({5}), layers::Dense(4, {.activation = "relu"}), layers::Dense(2)});
  model->compile({.optimizer = Adafactor({.learning_rate = 0.05}), .loss = "mse"});
  model->train_on_batch(random::uniform({6, 5}, {.seed = 1}), random::uniform({6, 2}, {.seed = 2}));
  const std::string path = dir.file("a.weights.h5");
  model->save_weights(path);
  // Two Dense layers: iteration, learning_rate, then (r, c, velocity) per kernel and per bias. The
  // round trip itself is test_every_optimizer.cpp's.
  io::H5Group saved = io::H5File::open_read(path).root().group("optimizer/vars");
  CHECK(saved.children().size() == 2 + 4 * 3);
  CHECK(saved.read_dataset("4").dtype() == DType::Float32);  // the first kernel's velocity
  CHECK(saved.read_dataset("5").dtype() == DType::Int32);    // the first bias's r and c placeholders
  CHECK(saved.read_dataset("6").dtype() == DType::Int32);
}
