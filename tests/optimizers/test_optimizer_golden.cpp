// Every optimizer and option variant against real Keras 3: three apply() calls on two variables, the
// variables, every optimizer variable (names, order, values), the learning rate and the iteration count
// after each step, and the EMA finalisation (tests/fixtures/optimizers/optimizer_steps.json).
#include <catch2/catch.hpp>

#include <regex>
#include <set>

#include "framework/ember.h"
#include "tests/optimizers/optimizer_fixtures.h"

using namespace ember;
using namespace ember::testing;
using nlohmann::json;

namespace {

// Keras auto-names Nadam's u_product "variable", "variable_1", ... by a process-wide counter; the
// suffix depends on what ran before, so it is not compared.
std::string strip_auto_suffix(const std::string& path) {
  static const std::regex suffix(R"(/variable_\d+$)");
  return std::regex_replace(path, suffix, "/variable");
}

Tensor from_json(const json& values, const Shape& shape, DType dtype) {
  return make(json_values(values), shape, dtype);
}

void replay(const json& c) {
  const DType dtype = dtype_from_name(c["dtype"].get<std::string>());
  // 2x3 and (4,) unless the case names other shapes.
  auto shape_of = [&](const char* var, Shape fallback) {
    return c.contains("shapes") ? Shape(c["shapes"][var].get<std::vector<int64_t>>()) : fallback;
  };
  const Shape kernel_shape = shape_of("kernel", {2, 3}), bias_shape = shape_of("bias", {4});
  // The variables' Keras paths are their names, unless the case gives paths (Muon routes by path).
  auto path_of = [&](const char* var) {
    return c.contains("paths") ? c["paths"][var].get<std::string>() : std::string(var);
  };
  Variable kernel(from_json(c["initial"]["kernel"], kernel_shape, dtype), {.name = path_of("kernel")});
  Variable bias(from_json(c["initial"]["bias"], bias_shape, dtype), {.name = path_of("bias")});

  optimizers::OptimizerPtr opt = optimizers::deserialize({{"class_name", c["class_name"]}, {"config", c["config"]}});
  REQUIRE(opt->class_name() == c["class_name"].get<std::string>());
  CHECK(opt->get_config() == c["config"]);
  if (!c["exclude_from_weight_decay"].is_null())
    opt->exclude_from_weight_decay(c["exclude_from_weight_decay"].get<std::vector<std::string>>());

  for (size_t s = 0; s < c["steps"].size(); ++s) {
    const json& step = c["steps"][s];
    const json& g = c["grads"][s];
    INFO("step " << s);
    CHECK(opt->learning_rate() == step["learning_rate"].get<double>());
    std::vector<Tensor> grads = {
        g["kernel"].is_null() ? Tensor() : from_json(g["kernel"], kernel_shape, dtype),
        g["bias"].is_null() ? Tensor() : from_json(g["bias"], bias_shape, dtype),
    };
    opt->apply(grads, {kernel, bias});

    // Keras's `iterations` counts updates: the call counter divided by gradient_accumulation_steps (the
    // counter variable itself is among the optimizer variables below).
    const json& accumulate = c["config"]["gradient_accumulation_steps"];
    const int64_t calls_per_update = accumulate.is_null() ? 1 : accumulate.get<int64_t>();
    CHECK(opt->iterations().value().item<int64_t>() / calls_per_update == step["iterations"].get<int64_t>());
    check_close(values_as_double(kernel.value()), json_values(step["vars"]["kernel"]), "kernel");
    check_close(values_as_double(bias.value()), json_values(step["vars"]["bias"]), "bias");
    const std::vector<Variable> vars = opt->variables();
    const json& expected = step["optimizer_variables"];
    REQUIRE(vars.size() == expected.size());
    for (size_t i = 0; i < vars.size(); ++i) {
      const json& e = expected[i];
      CHECK(strip_auto_suffix(vars[i].name()) == strip_auto_suffix(e["path"].get<std::string>()));
      CHECK_FALSE(vars[i].trainable());
      CHECK(dtype_name(vars[i].dtype()) == e["dtype"].get<std::string>());
      CHECK(vars[i].shape() == Shape(e["shape"].get<std::vector<int64_t>>()));
      check_close(values_as_double(vars[i].value()), json_values(e["values"]), e["path"].get<std::string>());
    }
  }
  if (!c["finalized"].is_null()) {
    opt->finalize_variable_values({kernel, bias});
    check_close(values_as_double(kernel.value()), json_values(c["finalized"]["kernel"]), "finalized kernel");
    check_close(values_as_double(bias.value()), json_values(c["finalized"]["bias"]), "finalized bias");
  }
}

}  // namespace

TEST_CASE("Keras golden steps: every optimizer and option", "[optimizers][keras]") {
  const json fixture = load_optimizer_fixture("optimizer_steps.json");
  REQUIRE(fixture["cases"].size() >= 40);
  for (const json& c : fixture["cases"]) {
    DYNAMIC_SECTION(c["name"].get<std::string>()) { replay(c); }
  }
}

TEST_CASE("Keras golden steps cover every optimizer class", "[optimizers][keras]") {
  const json fixture = load_optimizer_fixture("optimizer_steps.json");
  std::set<std::string> classes;
  for (const json& c : fixture["cases"]) classes.insert(c["class_name"].get<std::string>());
  for (const std::string name : {"SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "Nadam", "Lion",
                                 "Ftrl", "Lamb", "Adafactor", "Muon", "ScheduleFreeAdamW"}) {
    INFO(name);
    CHECK(classes.count(name) == 1);
  }
}
