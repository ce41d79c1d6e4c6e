// Golden values from real Keras 3 (tests/fixtures/losses/make_loss_fixtures.py): every loss class
// with its option variants, every reduction, sample-weight shapes and masks. Each case rebuilds the
// loss from its Keras class name and constructor arguments through losses::deserialize, checks that
// get_config() agrees with Keras's on every key Keras writes, and compares the reduced loss, the
// per-sample losses of call() and (for many cases) the gradient with respect to y_pred with Keras's,
// within 1e-6 relative (plus 1e-7 absolute for values near zero, or a case's own grad_atol).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/ember.h"
#include "tests/support/json_fixtures.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr double kRel = 1e-6;
constexpr double kAbs = 1e-7;

const json& fixtures() {
  static const json j = ember::testing::load_json_fixture("losses/losses.json");
  return j;
}

Tensor tensor_at(const json& index) { return ember::testing::tensor_from_json(fixtures().at("tensors").at(index.get<size_t>())); }

void check_values(const std::string& what, const Tensor& got, const json& expected, double abs_tol = kAbs) {
  INFO(what << ": " << got.to_string());
  REQUIRE(got.dtype() == DType::Float32);
  REQUIRE(got.shape() == Shape(expected.at("shape").get<std::vector<int64_t>>()));
  const std::vector<double> g = testing::values_as_double(got);
  const std::vector<double> e = expected.at("values").get<std::vector<double>>();
  REQUIRE(g.size() == e.size());
  for (size_t i = 0; i < g.size(); ++i) {
    INFO("element " << i << ": got " << g[i] << ", Keras " << e[i]);
    CHECK(std::abs(g[i] - e[i]) <= abs_tol + kRel * std::abs(e[i]));
  }
}

// Every key Keras writes must be in Ember's config with the same value (numbers compared as doubles).
void check_config(const json& ours, const json& keras) {
  for (const auto& [key, value] : keras.items()) {
    INFO("config key " << key << ": Ember " << ours.dump() << ", Keras " << keras.dump());
    REQUIRE(ours.contains(key));
    if (value.is_number())
      CHECK(ours[key].get<double>() == value.get<double>());
    else
      CHECK(ours[key] == value);
  }
}

}  // namespace

TEST_CASE("Keras loss fixtures: every case matches Keras 3", "[losses][keras]") {
  const json& cases = fixtures().at("cases");
  REQUIRE(cases.size() > 100);
  std::set<std::string> classes;
  for (const json& c : cases) {
    const std::string name = c.at("name").get<std::string>();
    INFO("case " << name);
    classes.insert(c.at("class_name").get<std::string>());
    losses::LossPtr loss = losses::deserialize({{"class_name", c.at("class_name")}, {"config", c.at("kwargs")}});
    REQUIRE(loss->class_name() == c.at("class_name").get<std::string>());
    check_config(loss->get_config(), c.at("keras_config"));

    const Tensor y_true = tensor_at(c.at("y_true"));
    const Tensor y_pred = tensor_at(c.at("y_pred"));
    const Tensor sw = c.contains("sample_weight") ? tensor_at(c.at("sample_weight")) : Tensor();
    check_values("per-sample losses", loss->call(y_true, y_pred), c.at("per_sample"));
    if (!c.contains("grad")) {
      check_values("loss", (*loss)(y_true, y_pred, sw), c.at("expected"));
      continue;
    }
    GradientTape tape;
    tape.watch(y_pred);
    const Tensor value = (*loss)(y_true, y_pred, sw);
    const Tensor total = ops::reduce_sum(value);
    check_values("loss", value, c.at("expected"));
    // A case may widen the absolute tolerance of its gradient (grad_atol: see make_loss_fixtures.py).
    check_values("gradient wrt y_pred", tape.gradient(total, {y_pred}).at(0), c.at("grad"),
                 std::max(kAbs, c.value("grad_atol", 0.0)));
  }
  // Every class the issue lists has cases.
  for (const char* cls : {"MeanSquaredError", "MeanAbsoluteError", "MeanAbsolutePercentageError", "Huber", "LogCosh",
                          "BinaryCrossentropy", "CategoricalCrossentropy", "SparseCategoricalCrossentropy",
                          "KLDivergence", "Hinge", "CosineSimilarity", "MeanSquaredLogarithmicError", "Poisson",
                          "SquaredHinge", "CategoricalHinge", "BinaryFocalCrossentropy", "CategoricalFocalCrossentropy",
                          "Dice", "Tversky", "Circle", "CategoricalGeneralizedCrossEntropy"})
    CHECK(classes.count(cls) == 1);
}
