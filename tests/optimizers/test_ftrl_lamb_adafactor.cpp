// Ftrl and Lamb beyond the golden steps (test_optimizer_golden.cpp): Keras's argument errors, configs as
// Keras writes them, optimizers::get/deserialize and slot names.
#include <catch2/catch.hpp>

#include "framework/ember.h"
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

TEST_CASE("Lamb accepts what Keras accepts, and checks the base options", "[optimizers][errors]") {
  // Keras validates none of its own hyperparameters.
  CHECK_NOTHROW(Lamb({.beta_1 = 2.0, .epsilon = -1.0}));
  CHECK_THROWS_WITH(Lamb({.use_ema = true, .ema_momentum = 1.5}), Catch::Contains("Lamb: `ema_momentum`"));
}

TEST_CASE("Ftrl and Lamb: default configs are Keras's", "[optimizers]") {
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
  CHECK(Ftrl().name() == "ftrl_1");  // auto-named per class, as the others
}

TEST_CASE("optimizers::get and deserialize know Ftrl and Lamb", "[optimizers]") {
  for (const auto& [id, cls] : std::vector<std::pair<std::string, std::string>>{
           {"ftrl", "Ftrl"}, {"FTRL", "Ftrl"}, {"lamb", "Lamb"}, {"LAMB", "Lamb"}}) {
    INFO(id);
    CHECK(get(id)->class_name() == cls);
  }
  const std::vector<std::string> known = registered_optimizers();
  for (const std::string cls : {"Ftrl", "Lamb"})
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
  for (const json& j : {ftrl, lamb}) {
    INFO(j["class_name"]);
    OptimizerPtr opt = deserialize(j);
    CHECK(opt->class_name() == j["class_name"]);
    CHECK(opt->get_config() == j["config"]);
    CHECK(serialize(*opt) == j);
    CHECK(deserialize(serialize(*opt))->get_config() == j["config"]);
  }
  json bad = ftrl;
  bad["config"]["amsgrad"] = false;
  CHECK_THROWS_WITH(deserialize(bad), Catch::Contains("Ftrl.from_config: argument not recognized: 'amsgrad'"));
  // Keys left out take the class defaults.
  CHECK(deserialize({{"class_name", "Ftrl"}, {"config", {{"beta", 0.5}}}})->get_config()["learning_rate_power"] == -0.5);
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

TEST_CASE("Ftrl and Lamb train a model through compile and fit", "[optimizers]") {
  for (const std::string id : {"ftrl", "lamb"}) {
    INFO(id);
    auto model = std::make_shared<Sequential>(std::vector<SequentialEntry>{layers::Input({3}), layers::Dense(1)});
    OptimizerPtr opt = get(id);
    opt->set_learning_rate(id == "ftrl" ? 0.5 : 0.05);
    model->compile({.optimizer = opt, .loss = "mse"});
    const Tensor x = random::uniform({32, 3}, {.seed = 3});
    const Tensor y = ops::reduce_sum(x, {-1}, true);
    const double first = model->evaluate(x, y, {.verbose = 0}).at("loss");
    model->fit(x, y, {.batch_size = 8, .epochs = 5, .verbose = 0});
    const double last = model->evaluate(x, y, {.verbose = 0}).at("loss");
    CHECK(last < first);
  }
}
