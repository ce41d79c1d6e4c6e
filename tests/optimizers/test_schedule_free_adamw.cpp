// ScheduleFreeAdamW beyond the golden steps (test_optimizer_golden.cpp): its config as Keras writes it,
// optimizers::get and deserialize, what Keras accepts and the momentum slot's start (training through fit
// and the checkpoint round trip: test_every_optimizer.cpp).
#include <catch2/catch.hpp>

#include "framework/ember.h"
#include "tests/optimizers/optimizer_fixtures.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using namespace ember::testing;
using namespace ember::optimizers;
using nlohmann::json;

TEST_CASE("ScheduleFreeAdamW: the default config is Keras's", "[optimizers]") {
  backend::clear_session();
  // optimizer.get_config() of Keras 3.15.1's defaults.
  const json sf = json::parse(R"({"name": "schedule_free_adam_w", "learning_rate": 0.0024999999441206455,
      "weight_decay": null, "clipnorm": null, "global_clipnorm": null, "clipvalue": null, "use_ema": false,
      "ema_momentum": 0.99, "ema_overwrite_frequency": null, "loss_scale_factor": null,
      "gradient_accumulation_steps": null, "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-08, "warmup_steps": 0})");
  CHECK(ScheduleFreeAdamW().get_config() == sf);
  CHECK(ScheduleFreeAdamW().name() == "schedule_free_adam_w_1");
}

TEST_CASE("optimizers::get and deserialize know ScheduleFreeAdamW", "[optimizers]") {
  for (const std::string id : {"schedulefreeadamw", "ScheduleFreeAdamW", "SCHEDULEFREEADAMW"}) {
    INFO(id);
    CHECK(get(id)->class_name() == "ScheduleFreeAdamW");
  }
  // Keras's names are the lower-cased class names, not the snake_case optimizer names.
  CHECK_THROWS_WITH(get("schedule_free_adam_w"), Catch::Contains("Could not interpret optimizer identifier"));

  // keras.saving.serialize_keras_object as Keras 3.15.1 writes it (every option changed).
  const json sf = json::parse(R"({"module": "keras.optimizers", "class_name": "ScheduleFreeAdamW", "config": {
      "name": "sf", "learning_rate": {"module": "keras.optimizers.schedules", "class_name": "ExponentialDecay",
      "config": {"initial_learning_rate": 0.1, "decay_steps": 2, "decay_rate": 0.5, "staircase": false,
      "name": "ExponentialDecay"}, "registered_name": null}, "weight_decay": 0.01, "clipnorm": null,
      "global_clipnorm": null, "clipvalue": null, "use_ema": true, "ema_momentum": 0.99,
      "ema_overwrite_frequency": null, "loss_scale_factor": null, "gradient_accumulation_steps": 4, "beta_1": 0.8,
      "beta_2": 0.99, "epsilon": 1e-06, "warmup_steps": 100}, "registered_name": null})");
  OptimizerPtr opt = deserialize(sf);
  CHECK(opt->class_name() == "ScheduleFreeAdamW");
  CHECK(opt->get_config() == sf["config"]);
  CHECK(serialize(*opt) == sf);
  CHECK(deserialize(serialize(*opt))->get_config() == sf["config"]);
  CHECK(opt->learning_rate_schedule() != nullptr);

  json bad = sf;
  bad["config"]["amsgrad"] = false;
  CHECK_THROWS_WITH(deserialize(bad),
                    Catch::Contains("ScheduleFreeAdamW.from_config: unknown config key \"amsgrad\""));
  bad = sf;
  bad["config"]["warmup_steps"] = 2.5;
  CHECK_THROWS_WITH(deserialize(bad), Catch::Contains("'warmup_steps' must be a whole number"));
  // Keys left out take the class defaults.
  CHECK(deserialize({{"class_name", "ScheduleFreeAdamW"}, {"config", json::object()}})->get_config()["epsilon"] ==
        1e-8);
}

TEST_CASE("ScheduleFreeAdamW accepts what Keras accepts, and checks the base options", "[optimizers][errors]") {
  // Keras validates none of its own hyperparameters (a warmup_steps <= 0 is no warmup).
  CHECK_NOTHROW(ScheduleFreeAdamW({.beta_1 = 2.0, .epsilon = -1.0, .warmup_steps = -5}));
  CHECK_THROWS_WITH(ScheduleFreeAdamW({.use_ema = true, .ema_momentum = 1.5}),
                    Catch::Contains("ScheduleFreeAdamW: `ema_momentum` must be in the range [0, 1]"));
}

TEST_CASE("ScheduleFreeAdamW: momentum starts as a copy of the variable", "[optimizers]") {
  Variable k(make({1, 2, 3, 4}, {2, 2}, DType::Float32), {.name = "kernel"});
  ScheduleFreeAdamW opt({.learning_rate = 0.1, .name = "sf"});
  opt.build({k});
  const std::vector<Variable> vars = opt.variables();
  std::vector<std::string> names;
  for (const Variable& v : vars) names.push_back(v.name());
  CHECK(names == std::vector<std::string>{"sf/iteration", "sf/learning_rate", "sf/kernel_momentum", "sf/kernel_velocity"});
  CHECK(values_as_double(vars[2].value()) == std::vector<double>{1, 2, 3, 4});
  CHECK(values_as_double(vars[3].value()) == std::vector<double>(4, 0));
  // A copy, not the variable's own tensor (which an in-place update of one would change under the other).
  CHECK_FALSE(vars[2].value().is_same(k.value()));
  opt.apply({ops::full({2, 2}, 0.5)}, {k});
  // First step: the averaging weight is 1, so y = z = w - lr g / (|g| + eps) = w - 0.1.
  for (double d : values_as_double(vars[2].value() - make({1, 2, 3, 4}, {2, 2}, DType::Float32)))
    CHECK(d == Approx(-0.1));
  check_close(values_as_double(k.value()), values_as_double(vars[2].value()), "y == z after one step");
}
