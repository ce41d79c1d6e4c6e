// LossScaleOptimizer against real Keras 3 (tests/fixtures/mixed_precision/loss_scale_steps.json): the scale,
// the counter, the inner optimizer's iterations, the variables and every optimizer variable after each
// step of trajectories with injected inf/nan gradients (skip + halve, growth after N finite steps); then
// its config, fixed mode, custom-loop helpers and errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>

#include "framework/ember.h"
#include "framework/ops/dispatch.h"
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

namespace {

// Three variables of dtype dt, and gradients for them step by step. Both are made once per (dtype, step) and
// copied: a seeded random op gives new numbers on every call, as TF's does.
std::vector<Variable> fused_test_variables(DType dt) {
  static std::map<DType, std::vector<Tensor>> made;
  if (!made.count(dt)) {
    const std::vector<Shape> shapes{{5, 3}, {3}, {40000}};
    for (size_t i = 0; i < shapes.size(); ++i)
      made[dt].push_back(ops::cast(random::uniform(shapes[i], {.minval = -1, .maxval = 1, .seed = 7 + i}), dt)
                             .to(Device::cpu()));
  }
  std::vector<Variable> vars;
  for (size_t i = 0; i < made[dt].size(); ++i)
    vars.emplace_back(made[dt][i].clone(), VariableOptions{.name = "v" + std::to_string(i)});
  return vars;
}

std::vector<Tensor> fused_test_gradients(const std::vector<Variable>& vars, int step) {
  static std::map<std::pair<DType, int>, std::vector<Tensor>> made;
  const std::pair<DType, int> key{vars[0].dtype(), step};
  if (!made.count(key))
    for (size_t i = 0; i < vars.size(); ++i)
      made[key].push_back(ops::cast(random::uniform(vars[i].shape(), {.minval = -1, .maxval = 1,
                                                                       .seed = static_cast<uint64_t>(100 * step + i)}),
                                    vars[i].dtype())
                              .to(Device::cpu()));
  return made[key];
}

// Counts the fused multi-variable updates run while installed.
int g_fused_updates = 0;
void count_fused(const OpRecord& r) {
  if (r.op == OpId::apply_adam_multi || r.op == OpId::apply_sgd_multi) ++g_fused_updates;
}
struct FusedCounter {
  int hook = add_op_hook(&count_fused);
  FusedCounter() { g_fused_updates = 0; }
  ~FusedCounter() { remove_op_hook(hook); }
};

void check_same_state(const optimizers::Optimizer& a, const std::vector<Variable>& va, const optimizers::Optimizer& b,
                      const std::vector<Variable>& vb) {
  for (size_t i = 0; i < va.size(); ++i) CHECK(same_bits(va[i].value(), vb[i].value()));
  const std::vector<Variable> oa = a.variables(), ob = b.variables();
  REQUIRE(oa.size() == ob.size());
  for (size_t i = 0; i < oa.size(); ++i) {
    INFO(oa[i].name());
    CHECK(same_bits(oa[i].value(), ob[i].value()));
  }
}

}  // namespace

TEST_CASE("Adam's and SGD's one fused pass over all variables equals their steps variable by variable, bit for bit",
          "[optimizers]") {
  using namespace optimizers;
  const std::vector<std::pair<std::string, std::function<OptimizerPtr()>>> makers{
      {"Adam", [] { return std::make_shared<Adam>(AdamOptions{.learning_rate = 0.01}); }},
      {"AdamW", [] { return std::make_shared<AdamW>(AdamWOptions{.learning_rate = 0.01}); }},
      {"SGD", [] { return std::make_shared<SGD>(SGDOptions{.learning_rate = 0.01}); }},
      {"SGD momentum", [] { return std::make_shared<SGD>(SGDOptions{.learning_rate = 0.01, .momentum = 0.9}); }},
      {"SGD Nesterov",
       [] { return std::make_shared<SGD>(SGDOptions{.learning_rate = 0.01, .momentum = 0.8, .nesterov = true}); }}};
  for (DType dt : {DType::Float32, DType::Float64})
    for (const auto& [name, make_opt] : makers) {
      INFO(dtype_name(dt) << " " << name);
      OptimizerPtr fused = make_opt(), each = make_opt();
      std::vector<Variable> vf = fused_test_variables(dt), ve = fused_test_variables(dt);
      for (int step = 0; step < 4; ++step) {
        FusedCounter counter;
        fused->apply(fused_test_gradients(vf, step), vf);
        CHECK(g_fused_updates == 1);
        // Holding the values keeps them from being updated in place: the optimizer then steps each on its own
        // (the slots too: AdamW's weight decay gives the variables new values first).
        each->build(ve);
        std::vector<Tensor> held;
        for (const Variable& v : ve) held.push_back(v.value());
        for (const Variable& v : each->variables()) held.push_back(v.value());
        each->apply(fused_test_gradients(ve, step), ve);
        CHECK(g_fused_updates == 1);
        CHECK(!same_bits(held[0], ve[0].value()));
      }
      check_same_state(*fused, vf, *each, ve);
    }
}

TEST_CASE("apply_if applies on true and leaves everything, iterations included, on false", "[optimizers]") {
  const optimizers::schedules::ExponentialDecay schedule(
      {.initial_learning_rate = 0.01, .decay_steps = 2, .decay_rate = 0.5});
  // Adam, AdamW and SGD gate their fused pass on the flag; a scheduled Adam reads it on the host: all behave alike.
  const std::vector<std::function<optimizers::OptimizerPtr()>> makers{
      [] { return std::make_shared<optimizers::Adam>(optimizers::AdamOptions{.learning_rate = 0.01}); },
      [] { return std::make_shared<optimizers::AdamW>(optimizers::AdamWOptions{.learning_rate = 0.01}); },
      [] { return std::make_shared<optimizers::SGD>(optimizers::SGDOptions{.learning_rate = 0.01, .momentum = 0.9}); },
      [schedule] { return std::make_shared<optimizers::Adam>(optimizers::AdamOptions{.learning_rate = schedule}); }};
  for (size_t m = 0; m < makers.size(); ++m) {
    INFO("optimizer " << m);
    optimizers::OptimizerPtr gated = makers[m](), plain = makers[m]();
    std::vector<Variable> vg = fused_test_variables(DType::Float32), vp = fused_test_variables(DType::Float32);
    const bool conditions[] = {true, false, true, true, false, true};
    for (int step = 0; step < 6; ++step) {
      FusedCounter counter;
      gated->apply_if(Tensor::scalar<bool>(conditions[step]), fused_test_gradients(vg, step), &vg);
      // The fixed-rate optimizers gate their fused pass (run on skipped steps too); the schedule reads the flag.
      CHECK(g_fused_updates == (m < 3 || conditions[step] ? 1 : 0));
      if (conditions[step]) plain->apply(fused_test_gradients(vp, step), vp);
      check_same_state(*gated, vg, *plain, vp);
    }
    CHECK(gated->iterations().value().item<int64_t>() == 4);
    CHECK(gated->learning_rate() == plain->learning_rate());
  }
  optimizers::Adam opt;
  CHECK_THROWS_WITH(opt.apply_if(Tensor::scalar<float>(1), {Tensor::scalar<float>(1)}),
                    Catch::Contains("expected a 0-d bool tensor"));
}

TEST_CASE("on a GPU, LossScaleOptimizer(AdamW) steps and skips without waiting, agreeing with the CPU",
          "[cuda][optimizers][mixed_precision]") {
  if (device_count(DeviceType::CUDA) == 0) {
    WARN("no CUDA device (device_count(DeviceType::CUDA) == 0): skipped");
    return;
  }
  const Device gpu = Device::cuda(0);
  auto run = [&](Device device, bool count_waits) {
    std::vector<Variable> made;
    {
      DeviceScope on_cpu(Device::cpu());  // the same numbers for both runs
      made = fused_test_variables(DType::Float32);
    }
    DeviceScope on(device);
    std::vector<Variable> vars;
    for (const Variable& v : made) vars.emplace_back(v.value().to(device), VariableOptions{.name = v.name()});
    mixed_precision::LossScaleOptimizer opt(optimizers::AdamW({.learning_rate = 0.01}),
                                            {.initial_scale = 4, .dynamic_growth_steps = 2});
    opt.build(vars);
    const int64_t waits = count_waits ? allocator_for(gpu).host_synchronizations() : 0;
    for (int step = 0; step < 6; ++step) {
      std::vector<Tensor> grads;
      {
        DeviceScope on_cpu(Device::cpu());
        grads = fused_test_gradients(made, step);
      }
      if (step == 2) grads[1] = grads[1] * std::numeric_limits<double>::infinity();  // skipped
      for (Tensor& g : grads) g = g.to(device);
      opt.apply(grads, vars);
    }
    if (count_waits) CHECK(allocator_for(gpu).host_synchronizations() == waits);
    CHECK(opt.iterations().value().item<int64_t>() == 5);
    std::vector<Tensor> out;
    for (const Variable& v : opt.variables()) out.push_back(v.value().to(Device::cpu()));
    return out;
  };
  const std::vector<Tensor> cpu = run(Device::cpu(), false), cuda = run(gpu, true);
  REQUIRE(cpu.size() == cuda.size());
  for (size_t i = 0; i < cpu.size(); ++i) {
    INFO("optimizer variable " << i);
    if (!is_floating(cpu[i].dtype())) {
      CHECK(same_bits(cpu[i], cuda[i]));
      continue;
    }
    // CUDA's powf may differ from the host's in the last bit of the step size.
    CHECK(ops::reduce_all(ops::less_equal(ops::abs(cpu[i] - cuda[i]), ops::abs(cpu[i]) * 1e-5 + 1e-12)).item<bool>());
  }
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
