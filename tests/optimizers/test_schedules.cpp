// Learning-rate schedules: values against real Keras at many steps (tests/fixtures/optimizers/
// schedules.json), configs, (de)serialization, the LearningRate option type and Keras's errors.
#include <catch2/catch.hpp>

#include "framework/ember.h"
#include "tests/optimizers/optimizer_fixtures.h"

using namespace ember;
using namespace ember::testing;
using namespace ember::optimizers;
using nlohmann::json;

TEST_CASE("schedules match Keras at every recorded step", "[optimizers][schedules][keras]") {
  const json fixture = load_optimizer_fixture("schedules.json");
  REQUIRE(fixture["cases"].size() >= 10);
  for (const json& c : fixture["cases"]) {
    DYNAMIC_SECTION(c["name"].get<std::string>()) {
      schedules::SchedulePtr s = schedules::deserialize(c["config"]);
      CHECK(s->class_name() == c["class_name"].get<std::string>());
      // The config round-trips exactly into Keras's serialized form.
      CHECK(schedules::serialize(*s) == c["config"]);
      std::vector<double> got;
      for (const json& step : c["steps"]) got.push_back((*s)(step.get<int64_t>()));
      check_close(got, json_values(c["values"]), c["name"].get<std::string>());
    }
  }
}

TEST_CASE("schedules: formulas on hand-checked values", "[optimizers][schedules]") {
  schedules::ExponentialDecay e({.initial_learning_rate = 0.1, .decay_steps = 10, .decay_rate = 0.5});
  CHECK(e(0) == Approx(0.1).epsilon(1e-7));
  CHECK(e(10) == Approx(0.05).epsilon(1e-7));
  CHECK(e(5) == Approx(0.1 * std::sqrt(0.5)).epsilon(1e-6));
  schedules::ExponentialDecay stair({.initial_learning_rate = 0.1, .decay_steps = 10, .decay_rate = 0.5,
                                     .staircase = true});
  CHECK(stair(19) == Approx(0.05).epsilon(1e-7));

  schedules::PiecewiseConstantDecay p({.boundaries = {100, 200}, .values = {1.0, 0.5, 0.1}});
  CHECK(p(100) == Approx(1.0));  // a boundary belongs to the range below it
  CHECK(p(101) == Approx(0.5));
  CHECK(p(201) == Approx(0.1));

  schedules::PolynomialDecay poly({.initial_learning_rate = 1.0, .decay_steps = 10});
  CHECK(poly(5) == Approx(0.5 * (1.0 - 0.0001) + 0.0001).epsilon(1e-6));
  CHECK(poly(50) == Approx(0.0001).epsilon(1e-6));  // capped at decay_steps

  schedules::InverseTimeDecay inv({.initial_learning_rate = 1.0, .decay_steps = 1, .decay_rate = 0.5});
  CHECK(inv(2) == Approx(0.5).epsilon(1e-7));

  schedules::CosineDecay cos({.initial_learning_rate = 1.0, .decay_steps = 10, .warmup_target = 2.0,
                              .warmup_steps = 4});
  CHECK(cos(2) == Approx(1.5).epsilon(1e-7));  // halfway through the warmup
  CHECK(cos(4) == Approx(2.0).epsilon(1e-7));  // decay starts from the warmup target
  CHECK(cos(9) == Approx(1.0).epsilon(1e-6));  // halfway through the decay
  CHECK(cos(1000) == Approx(0.0).margin(1e-7));
}

TEST_CASE("schedules: values are float32, as Keras computes them", "[optimizers][schedules]") {
  schedules::ExponentialDecay e({.initial_learning_rate = 0.1, .decay_steps = 3, .decay_rate = 0.7});
  for (int64_t step : {0, 1, 7, 100}) {
    double v = e(step);
    CHECK(static_cast<double>(static_cast<float>(v)) == v);
  }
}

TEST_CASE("schedules: Keras's argument errors", "[optimizers][schedules][errors]") {
  CHECK_THROWS_WITH(schedules::ExponentialDecay({.initial_learning_rate = 0.1, .decay_steps = 0, .decay_rate = 0.5}),
                    Catch::Contains("`decay_steps` must be > 0") && Catch::Contains("decay_steps=0"));
  CHECK_THROWS_AS(schedules::PolynomialDecay({.initial_learning_rate = 0.1, .decay_steps = -1}), InvalidArgument);
  CHECK_THROWS_AS(schedules::InverseTimeDecay({.initial_learning_rate = 0.1, .decay_steps = 0}), InvalidArgument);
  CHECK_THROWS_AS(schedules::CosineDecay({.initial_learning_rate = 0.1}), InvalidArgument);
  CHECK_THROWS_WITH(schedules::PiecewiseConstantDecay({.boundaries = {1, 2}, .values = {0.1, 0.2}}),
                    Catch::Contains("should be 1 less than the length of values") &&
                        Catch::Contains("boundaries=[1, 2] of length 2"));
  CHECK_THROWS_WITH(schedules::deserialize({{"class_name", "LinearWarmup"}, {"config", json::object()}}),
                    Catch::Contains("unknown learning rate schedule 'LinearWarmup'") &&
                        Catch::Contains("CosineDecayRestarts"));
  CHECK_THROWS_WITH(schedules::CosineDecayRestarts({.initial_learning_rate = 0.1}),
                    Catch::Contains("`first_decay_steps` must be > 0"));
  CHECK_THROWS_WITH(
      schedules::deserialize({{"class_name", "ExponentialDecay"},
                              {"config", {{"initial_learning_rate", 0.1}, {"decay_steps", 2}, {"rate", 0.5}}}}),
      Catch::Contains("unknown config key \"rate\""));
  CHECK_THROWS_WITH(
      schedules::deserialize({{"class_name", "ExponentialDecay"},
                              {"config", {{"initial_learning_rate", 0.1}, {"decay_steps", 2.5}, {"decay_rate", 0.5}}}}),
      Catch::Contains("'decay_steps' must be a whole number"));
  // Arguments without a default in Keras's constructors are required in a config too.
  CHECK_THROWS_WITH(
      schedules::deserialize({{"class_name", "ExponentialDecay"},
                              {"config", {{"initial_learning_rate", 0.1}, {"decay_steps", 2}}}}),
      Catch::Contains("ExponentialDecay.from_config: missing required argument 'decay_rate'"));
  CHECK_THROWS_WITH(schedules::deserialize({{"class_name", "CosineDecay"}, {"config", {{"decay_steps", 2}}}}),
                    Catch::Contains("missing required argument 'initial_learning_rate'"));
  CHECK_THROWS_WITH(schedules::deserialize({{"class_name", "InverseTimeDecay"},
                                            {"config", {{"initial_learning_rate", 0.1}, {"decay_rate", 0.5}}}}),
                    Catch::Contains("missing required argument 'decay_steps'"));
  CHECK_THROWS_WITH(schedules::PiecewiseConstantDecay({.boundaries = {}, .values = {0.1}}),
                    Catch::Contains("boundaries is empty"));
}

TEST_CASE("schedules: PiecewiseConstantDecay sums its ranges as Keras does", "[optimizers][schedules]") {
  // Boundaries that do not increase make ranges overlap: Keras 3.15 gives 5.0 at step 4 here (1 + 4).
  schedules::PiecewiseConstantDecay p({.boundaries = {5, 3}, .values = {1.0, 2.0, 4.0}});
  CHECK(p(2) == 1.0);
  CHECK(p(4) == 5.0);
  CHECK(p(6) == 4.0);
  schedules::PiecewiseConstantDecay q({.boundaries = {10}, .values = {0.3, 0.1}});
  CHECK(q(10) == static_cast<double>(0.3f));
  CHECK(q(11) == static_cast<double>(0.1f));
}

TEST_CASE("LearningRate: a number or any schedule", "[optimizers][schedules]") {
  LearningRate a = 0.01;
  CHECK_FALSE(a.is_schedule());
  CHECK(a.value() == 0.01);
  LearningRate b = schedules::CosineDecay({.initial_learning_rate = 0.1, .decay_steps = 5});
  REQUIRE(b.is_schedule());
  CHECK(b.schedule()->class_name() == "CosineDecay");
  CHECK((*b.schedule())(5) == Approx(0.0).margin(1e-9));
  auto shared = std::make_shared<schedules::InverseTimeDecay>(
      schedules::InverseTimeDecayOptions{.initial_learning_rate = 1, .decay_steps = 1, .decay_rate = 1});
  LearningRate c = schedules::SchedulePtr(shared);
  CHECK(c.schedule().get() == shared.get());
  CHECK_THROWS_AS(LearningRate(schedules::SchedulePtr()), InvalidArgument);
}
