// LossScaleOptimizer against real Keras 3 (tests/fixtures/mixed_precision/loss_scale_steps.json): the scale,
// the counter, the inner optimizer's iterations, the variables and every optimizer variable after each
// step of trajectories with injected inf/nan gradients (skip + halve, growth after N finite steps); then
// its config, fixed mode, custom-loop helpers and errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "framework/ember.h"
#include "tests/optimizers/optimizer_fixtures.h"

using namespace ember;
using namespace ember::testing;
using nlohmann::json;

namespace {

std::vector<double> lso_values(const json& values) {
  std::vector<double> out;
  for (const json& v : values) {
    if (v.is_number()) out.push_back(v.get<double>());
    else if (v == "nan") out.push_back(std::numeric_limits<double>::quiet_NaN());
    else out.push_back(v == "inf" ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity());
  }
  return out;
}

void lso_replay(const json& c) {
  INFO("case " << c["name"].get<std::string>());
  const Shape kernel_shape{2, 3}, bias_shape{4};
  Variable kernel(make(lso_values(c["initial"]["kernel"]), kernel_shape, DType::Float32), {.name = "kernel"});
  Variable bias(make(lso_values(c["initial"]["bias"]), bias_shape, DType::Float32), {.name = "bias"});

  optimizers::OptimizerPtr opt = optimizers::deserialize({{"class_name", "LossScaleOptimizer"}, {"config", c["config"]}});
  auto& lso = dynamic_cast<mixed_precision::LossScaleOptimizer&>(*opt);
  CHECK(lso.get_config() == c["config"]);
  CHECK(lso.inner_optimizer()->get_config() == c["inner"]["config"]);
  CHECK(lso.scale_loss(Tensor::scalar(1.5f)).item<float>() == c["scaled_loss"].get<double>());

  for (size_t s = 0; s < c["steps"].size(); ++s) {
    const json& step = c["steps"][s];
    const json& g = c["grads"][s];
    INFO("step " << s);
    const std::vector<Tensor> grads = {
        g["kernel"].is_null() ? Tensor() : make(lso_values(g["kernel"]), kernel_shape, DType::Float32),
        g["bias"].is_null() ? Tensor() : make(lso_values(g["bias"]), bias_shape, DType::Float32),
    };
    opt->apply(grads, {kernel, bias});

    CHECK(lso.dynamic_scale() == step["dynamic_scale"].get<double>());
    CHECK(lso.step_counter() == step["step_counter"].get<int64_t>());
    CHECK(opt->iterations().value().item<int64_t>() == step["iterations"].get<int64_t>());
    check_close(values_as_double(kernel.value()), json_values(step["vars"]["kernel"]), "kernel");
    check_close(values_as_double(bias.value()), json_values(step["vars"]["bias"]), "bias");
    const std::vector<Variable> vars = opt->variables();
    const json& expected = step["optimizer_variables"];
    REQUIRE(vars.size() == expected.size());
    for (size_t i = 0; i < vars.size(); ++i) {
      const json& e = expected[i];
      // Keras nests the inner optimizer's slot paths under the wrapper's name scope; the names end alike.
      CHECK_THAT(e["path"].get<std::string>(), Catch::EndsWith(vars[i].name()));
      CHECK(dtype_name(vars[i].dtype()) == e["dtype"].get<std::string>());
      CHECK(vars[i].shape() == Shape(e["shape"].get<std::vector<int64_t>>()));
      check_close(values_as_double(vars[i].value()), json_values(e["values"]), e["path"].get<std::string>());
    }
  }
}

}  // namespace

TEST_CASE("LossScaleOptimizer follows Keras's trajectories: skip and halve, grow after N finite steps",
          "[optimizers][mixed_precision][keras]") {
  const json fixture = load_optimizer_fixture("loss_scale_steps.json", "mixed_precision");
  REQUIRE(fixture["cases"].size() == 3);
  for (const json& c : fixture["cases"]) lso_replay(c);
}

TEST_CASE("a skipped step leaves the inner optimizer untouched", "[optimizers][mixed_precision]") {
  Variable w(make({1, 2, 3}, {3}, DType::Float32), {.name = "w"});
  mixed_precision::LossScaleOptimizer opt(optimizers::Adam(), {.initial_scale = 256, .dynamic_growth_steps = 3});
  opt.apply({make({256, 512, -256}, {3}, DType::Float32)}, {w});
  const std::vector<float> w1 = w.value().to_vector<float>();
  std::vector<std::vector<float>> inner_before;
  for (const Variable& v : opt.inner_optimizer()->variables())
    if (v.dtype() == DType::Float32) inner_before.push_back(v.value().to_vector<float>());
  opt.apply({make({1, std::nan(""), 1}, {3}, DType::Float32)}, {w});
  CHECK(w.value().to_vector<float>() == w1);
  CHECK(opt.iterations().value().item<int64_t>() == 1);
  CHECK(opt.dynamic_scale() == 128);
  CHECK(opt.step_counter() == 0);
  size_t k = 0;
  for (const Variable& v : opt.inner_optimizer()->variables())
    if (v.dtype() == DType::Float32) CHECK(v.value().to_vector<float>() == inner_before[k++]);
}

TEST_CASE("LossScaleOptimizer: custom-loop helpers, fixed scale, forwarding", "[optimizers][mixed_precision]") {
  mixed_precision::LossScaleOptimizer opt(optimizers::SGD({.learning_rate = 0.5}), {.initial_scale = 8});
  CHECK(opt.name().rfind("loss_scale_optimizer", 0) == 0);
  CHECK(opt.get_scaled_loss(Tensor::scalar(2.0f)).item<float>() == 16.0f);
  // A half-precision loss is scaled in float32 (Keras's multiply by the float32 scale promotes it).
  CHECK(opt.scale_loss(ops::cast(Tensor::scalar(2.0f), DType::Float16)).dtype() == DType::Float32);
  std::vector<Tensor> unscaled = opt.get_unscaled_gradients({make({8, -16}, {2}, DType::Float32), Tensor()});
  CHECK(unscaled[0].to_vector<float>() == std::vector<float>{1, -2});
  CHECK_FALSE(unscaled[1].defined());
  CHECK(opt.learning_rate() == 0.5);
  opt.set_learning_rate(0.25);
  CHECK(opt.inner_optimizer()->learning_rate() == 0.25);

  // Fixed mode: the scale never moves and every step applies.
  Variable w(make({1}, {1}, DType::Float32), {.name = "w"});
  mixed_precision::LossScaleOptimizer fixed(optimizers::SGD({.learning_rate = 1.0}),
                                            {.dynamic = false, .initial_scale = 4, .dynamic_growth_steps = 1});
  for (int i = 0; i < 3; ++i) fixed.apply({make({4}, {1}, DType::Float32)}, {w});
  CHECK(w.value().to_vector<float>() == std::vector<float>{-2});
  CHECK(fixed.dynamic_scale() == 4);
  CHECK(fixed.iterations().value().item<int64_t>() == 3);
  CHECK(fixed.get_config()["dynamic"] == false);
  auto back = optimizers::deserialize(optimizers::serialize(fixed));
  CHECK(back->get_config() == fixed.get_config());

  // The inner optimizer's own loss_scale_factor is switched off, as Keras does.
  mixed_precision::LossScaleOptimizer wrapped(optimizers::SGD({.loss_scale_factor = 10}));
  CHECK(wrapped.inner_optimizer()->get_config()["loss_scale_factor"].is_null());
}

TEST_CASE("LossScaleOptimizer errors name the argument", "[optimizers][mixed_precision][errors]") {
  CHECK_THROWS_AS(mixed_precision::LossScaleOptimizer(optimizers::SGD(), {.initial_scale = 0}), InvalidArgument);
  CHECK_THROWS_AS(mixed_precision::LossScaleOptimizer(optimizers::SGD(), {.dynamic_growth_steps = 0}), InvalidArgument);
  CHECK_THROWS_AS(mixed_precision::LossScaleOptimizer(optimizers::OptimizerPtr()), InvalidArgument);
  const json inner = optimizers::serialize(optimizers::SGD());
  auto message = [](const json& config) {
    try {
      optimizers::deserialize({{"class_name", "LossScaleOptimizer"}, {"config", config}});
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(message({{"inner_optimizer", inner}, {"clipnorm", 1.0}}), Catch::Contains("clipnorm"));
  CHECK_THAT(message({{"inner_optimizer", inner}, {"bogus", 1}}), Catch::Contains("bogus"));
  CHECK_THAT(message({{"initial_scale", 2.0}}), Catch::Contains("inner_optimizer"));
  // Older Keras files wrote the base arguments at their defaults: accepted.
  CHECK(message({{"inner_optimizer", inner}, {"clipnorm", nullptr}, {"use_ema", false}}) == "no error");
  Variable w(make({1}, {1}, DType::Float32), {.name = "w"});
  mixed_precision::LossScaleOptimizer opt{optimizers::SGD()};
  CHECK_THROWS_AS(opt.apply({make({1}, {1}, DType::Float32)}), FailedPrecondition);
  CHECK_THROWS_AS(opt.apply({make({1}, {1}, DType::Float32), Tensor()}, {w}), InvalidArgument);
}
