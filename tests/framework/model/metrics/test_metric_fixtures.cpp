// Golden values from real Keras 3 (tests/fixtures/metrics/make_metric_fixtures.py): every metric over
// three update_state calls, with and without sample weights. Each case rebuilds the metric from its
// Keras class name and constructor arguments through metrics::deserialize, checks get_config()
// against Keras's (and that Keras's config, read back, gives the same config), compares result() after every update and the state variables after the last one
// within 1e-6 relative (plus 1e-7 absolute; the confusion counts relative to their largest count),
// then checks that reset_state() brings the result to 0 (or to what Keras gives after it: R2Score's NaN).
// Also replays what Keras's compile turns "accuracy" into for a table of shapes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
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
  static const json j = ember::testing::load_json_fixture("metrics/metrics.json");
  return j;
}

Tensor tensor_at(const json& update, const char* key) {
  if (!update.contains(key)) return Tensor();
  return ember::testing::tensor_from_json(fixtures().at("tensors").at(update.at(key).get<size_t>()));
}

// A fixture value: a number, or "nan", "inf", "-inf" (JSON has no such numbers).
double expected_value(const json& v) {
  if (v.is_number()) return v.get<double>();
  const std::string s = v.get<std::string>();
  if (s == "nan") return std::nan("");
  if (s == "inf") return std::numeric_limits<double>::infinity();
  if (s == "-inf") return -std::numeric_limits<double>::infinity();
  throw std::runtime_error("fixture value " + s);
}

// Within kRel of each value (NaN and infinities exactly); with relative_to_max (the confusion counts), within kRel of the largest
// count instead: Keras's true/false negatives are differences of two sums (total - cumulative sum)
// that Keras and Ember add up in different orders, so near zero they differ by an ulp of the total.
void check_values(const std::string& what, const Tensor& got, const json& expected, bool relative_to_max = false) {
  INFO(what << ": " << got.to_string());
  REQUIRE(got.dtype() == DType::Float32);
  REQUIRE(got.shape() == Shape(expected.at("shape").get<std::vector<int64_t>>()));
  const std::vector<double> g = testing::values_as_double(got);
  std::vector<double> e;
  for (const json& v : expected.at("values")) e.push_back(expected_value(v));
  REQUIRE(g.size() == e.size());
  double scale = 0;
  for (double v : e)
    if (std::isfinite(v)) scale = std::max(scale, std::abs(v));
  for (size_t i = 0; i < g.size(); ++i) {
    INFO("element " << i << ": got " << g[i] << ", Keras " << e[i]);
    if (std::isnan(e[i]))
      CHECK(std::isnan(g[i]));
    else if (std::isinf(e[i]))
      CHECK(g[i] == e[i]);
    else
      CHECK(std::abs(g[i] - e[i]) <= kAbs + kRel * (relative_to_max ? scale : std::abs(e[i])));
  }
}

void check_config(const json& ours, const json& keras) {
  for (const auto& [key, value] : keras.items()) {
    INFO("config key " << key << ": Ember " << ours.dump() << ", Keras " << keras.dump());
    REQUIRE(ours.contains(key));
    if (value.is_number())
      CHECK(ours[key].get<double>() == value.get<double>());
    else if (value.is_array() && !value.empty() && value[0].is_number())
      CHECK(ours[key].get<std::vector<double>>() == value.get<std::vector<double>>());
    else
      CHECK(ours[key] == value);
  }
}

}  // namespace

TEST_CASE("Keras metric fixtures: every case matches Keras 3", "[metrics][keras]") {
  const json& cases = fixtures().at("cases");
  REQUIRE(cases.size() > 340);
  std::set<std::string> classes;
  for (const json& c : cases) {
    const std::string name = c.at("name").get<std::string>();
    INFO("case " << name);
    const std::string cls = c.at("class_name").get<std::string>();
    classes.insert(cls);
    metrics::MetricPtr m = metrics::deserialize({{"class_name", cls}, {"config", c.at("kwargs")}});
    REQUIRE(m->class_name() == cls);
    check_config(m->get_config(), c.at("keras_config"));
    check_config(metrics::deserialize({{"class_name", cls}, {"config", c.at("keras_config")}})->get_config(),
                 c.at("keras_config"));
    // The confusion counts' results are their accumulators, compared as the state variables are.
    const bool counts = cls == "TruePositives" || cls == "FalsePositives" || cls == "TrueNegatives" ||
                        cls == "FalseNegatives";
    const json& updates = c.at("updates");
    for (size_t i = 0; i < updates.size(); ++i) {
      INFO("after update " << i);
      const json& u = updates[i];
      if (u.contains("values")) {
        auto* reduction = dynamic_cast<metrics::Mean*>(m.get());
        if (reduction)
          reduction->update_state(tensor_at(u, "values"), tensor_at(u, "sample_weight"));
        else
          dynamic_cast<metrics::Sum&>(*m).update_state(tensor_at(u, "values"), tensor_at(u, "sample_weight"));
      } else {
        m->update_state(tensor_at(u, "y_true"), tensor_at(u, "y_pred"), tensor_at(u, "sample_weight"));
      }
      check_values("result", m->result(), c.at("results").at(i), /*relative_to_max=*/counts);
    }
    for (const auto& [vname, expected] : c.at("variables").items()) {
      bool found = false;
      for (const Variable& v : m->variables()) {
        if (v.name() != m->name() + "/" + vname) continue;
        found = true;
        CHECK_FALSE(v.trainable());
        check_values("variable " + vname, v.value(), expected, /*relative_to_max=*/true);
      }
      INFO("variable " << vname);
      CHECK(found);
    }
    m->reset_state();
    if (c.contains("reset_result")) {
      check_values("result after reset_state", m->result(), c.at("reset_result"));
    } else {
      for (float v : m->result().to_vector<float>()) CHECK(v == 0.0f);
    }
  }
  for (const char* cls :
       {"Mean", "Sum", "Accuracy", "BinaryAccuracy", "CategoricalAccuracy", "SparseCategoricalAccuracy",
        "TopKCategoricalAccuracy", "SparseTopKCategoricalAccuracy", "Precision", "Recall", "AUC", "MeanSquaredError",
        "MeanAbsoluteError", "RootMeanSquaredError", "MeanAbsolutePercentageError", "CosineSimilarity", "LogCoshError",
        "BinaryCrossentropy", "CategoricalCrossentropy", "SparseCategoricalCrossentropy", "KLDivergence", "Hinge",
        "SquaredHinge", "CategoricalHinge", "MeanSquaredLogarithmicError", "Poisson",
        "TruePositives", "FalsePositives", "TrueNegatives", "FalseNegatives", "PrecisionAtRecall", "RecallAtPrecision",
        "SensitivityAtSpecificity", "SpecificityAtSensitivity", "F1Score", "FBetaScore", "R2Score"})
    CHECK(classes.count(cls) == 1);
}

TEST_CASE("\"accuracy\" without a loss resolves by Keras 3's shape rule", "[metrics][keras]") {
  for (const json& r : fixtures().at("accuracy_resolution")) {
    const Shape t(r.at("y_true_shape").get<std::vector<int64_t>>());
    const Shape p(r.at("y_pred_shape").get<std::vector<int64_t>>());
    INFO("y_true " << t << ", y_pred " << p);
    metrics::MetricPtr m = metrics::get("accuracy");
    m->update_state(ops::zeros(t), ops::zeros(p));
    CHECK(m->class_name() == r.at("class_name").get<std::string>());
    CHECK(m->name() == "accuracy");
  }
}
