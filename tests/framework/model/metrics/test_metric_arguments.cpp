// The later metrics' arguments, configs and input checks beyond the Keras golden values
// (test_metric_fixtures.cpp): Keras's argument validation, config round trips, what each refuses.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "framework/ember.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using Catch::Matchers::Contains;
using testing::make;

namespace {

Tensor f32(const std::vector<double>& v, const Shape& s) { return make(v, s, DType::Float32); }
Tensor i32(const std::vector<double>& v, const Shape& s) { return make(v, s, DType::Int32); }
float value(const metrics::Metric& m) { return m.result().item<float>(); }
metrics::MetricPtr from_config(const std::string& cls, const nlohmann::json& config) {
  return metrics::deserialize({{"class_name", cls}, {"config", config}});
}

}  // namespace

TEST_CASE("Loss-based metrics: options reach the loss, configs round-trip", "[metrics]") {
  const Tensor labels = f32({0, 1, 1, 0}, {2, 2});
  const Tensor logits = f32({-1.5, 2.0, 0.5, 0.25}, {2, 2});
  metrics::BinaryCrossentropy from_logits({.from_logits = true, .label_smoothing = 0.2});
  from_logits.update_state(labels, logits);
  metrics::BinaryCrossentropy on_probs({.label_smoothing = 0.2});
  on_probs.update_state(labels, ops::sigmoid(logits));
  CHECK(value(from_logits) == Approx(value(on_probs)).epsilon(1e-5));
  CHECK(from_logits.get_config() == nlohmann::json({{"name", "binary_crossentropy"}, {"dtype", "float32"},
                                                    {"from_logits", true}, {"label_smoothing", 0.2}}));
  // The loss's own checks apply (Keras's metric would compute with any smoothing).
  CHECK_THROWS_WITH(metrics::BinaryCrossentropy({.label_smoothing = 1.5}), Contains("label_smoothing"));

  metrics::CategoricalCrossentropy cce({.axis = 0, .name = "cce0"});
  CHECK(cce.clone()->get_config() == cce.get_config());
  CHECK(cce.get_config()["axis"] == 0);
  CHECK(cce.get_config()["name"] == "cce0");

  // CosineSimilarity: Keras's config leaves out axis; Ember's keeps it, so clone() keeps it.
  metrics::CosineSimilarity along_rows({.axis = 0});
  const Tensor a = f32({1, 0, 0, 1, 1, 1}, {3, 2}), b = f32({1, 1, 0, 2, 1, 0}, {3, 2});
  along_rows.update_state(a, b);
  metrics::MetricPtr copy = along_rows.clone();
  copy->update_state(a, b);
  CHECK(value(*copy) == value(along_rows));
  metrics::CosineSimilarity along_columns;
  along_columns.update_state(a, b);
  CHECK(value(along_columns) != Approx(value(along_rows)));
  CHECK(from_config("CosineSimilarity", {{"name", "cos"}, {"dtype", "float32"}})->get_config()["axis"] == -1);

  // SparseCategoricalCrossentropy's ignore_class: without weights the ignored samples count as 0, with
  // weights they weigh 0 (Keras's metric; test_metric_fixtures checks the values).
  metrics::SparseCategoricalCrossentropy ignore({.ignore_class = 2});
  const Tensor probs = f32({0.7, 0.2, 0.1, 0.1, 0.1, 0.8}, {2, 3});
  ignore.update_state(i32({0, 2}, {2}), probs);
  CHECK(value(ignore) == Approx(-std::log(0.7) / 2).epsilon(1e-6));
  ignore.reset_state();
  ignore.update_state(i32({0, 2}, {2}), probs, f32({1, 1}, {2}));
  CHECK(value(ignore) == Approx(-std::log(0.7)).epsilon(1e-6));
  CHECK(ignore.get_config()["ignore_class"] == 2);
  CHECK(metrics::SparseCategoricalCrossentropy().get_config()["ignore_class"].is_null());
  CHECK_THROWS_WITH(ignore.update_state(i32({0, 2}, {2}), probs, f32({1, 1, 1}, {3})),
                    Contains("sample_weight of shape (3,)"));

  CHECK_THROWS_WITH(from_config("KLDivergence", {{"axis", -1}}), Contains("unknown config key \"axis\""));
  CHECK_THROWS_WITH(from_config("BinaryCrossentropy", {{"axis", -1}}), Contains("unknown config key \"axis\""));
  metrics::MeanAbsolutePercentageError mape;
  CHECK_THROWS_WITH(mape.update_state(f32({1, 2}, {2}), probs), Contains("MeanAbsolutePercentageError") &&
                                                                    Contains("(2, 3)"));
}

TEST_CASE("Confusion counts: thresholds, configs, errors", "[metrics]") {
  metrics::FalseNegatives fn({.thresholds = std::vector<double>{0.3, 0.6}});
  fn.update_state(f32({1, 1, 0, 1}, {4}), f32({0.2, 0.5, 0.9, 0.7}, {4}), f32({1, 2, 1, 0.5}, {4}));
  CHECK(fn.result().to_vector<float>() == std::vector<float>{1, 3});
  CHECK(fn.get_config()["thresholds"] == nlohmann::json({0.3, 0.6}));
  CHECK(fn.variables().size() == 1);
  CHECK(fn.variables()[0].name() == "false_negatives/accumulator");
  // One number in a Keras config is one threshold: a scalar result.
  metrics::MetricPtr tn = from_config("TrueNegatives", {{"thresholds", 0.5}});
  tn->update_state(f32({0, 0, 1}, {3}), f32({0.2, 0.7, 0.1}, {3}));
  CHECK(tn->result().shape() == Shape{});
  CHECK(value(*tn) == 1.0f);
  CHECK(metrics::TruePositives().get_config()["thresholds"].is_null());
  CHECK_THROWS_WITH(metrics::TruePositives({.thresholds = std::vector<double>{0.5, 1.5}}),
                    Contains("TruePositives") && Contains("1.5"));
  CHECK_THROWS_WITH(metrics::FalsePositives({.thresholds = std::vector<double>{}}), Contains("must not be empty"));
  CHECK_THROWS_WITH(from_config("TruePositives", {{"thresholds", "high"}}), Contains("thresholds"));
}

TEST_CASE("Metrics at a target rate: arguments, thresholds, configs", "[metrics]") {
  CHECK_THROWS_WITH(metrics::PrecisionAtRecall(1.5), Contains("PrecisionAtRecall") && Contains("recall=1.5"));
  CHECK_THROWS_WITH(metrics::SensitivityAtSpecificity(-0.1), Contains("specificity"));
  CHECK_THROWS_WITH(metrics::RecallAtPrecision(0.5, {.num_thresholds = 0}), Contains("num_thresholds"));
  metrics::SpecificityAtSensitivity one(0.5, {.num_thresholds = 1});
  CHECK(one.thresholds() == std::vector<double>{0.5});
  metrics::SensitivityAtSpecificity five(0.5, {.num_thresholds = 5, .class_id = 1, .name = "sens"});
  CHECK(five.thresholds() == std::vector<double>{0.0, 0.25, 0.5, 0.75, 1.0});
  CHECK(five.get_config() == nlohmann::json({{"name", "sens"}, {"dtype", "float32"}, {"class_id", 1},
                                             {"num_thresholds", 5}, {"specificity", 0.5}}));
  CHECK(five.clone()->get_config() == five.get_config());
  REQUIRE(five.variables().size() == 4);
  CHECK(five.variables()[2].name() == "sens/true_negatives");
  // A prediction of exactly 0 is above no threshold (the end points carry no epsilon, unlike AUC's).
  metrics::RecallAtPrecision two(0.0, {.num_thresholds = 2});
  two.update_state(f32({1, 1}, {2}), f32({0.0, 0.3}, {2}));
  CHECK(value(two) == 0.5f);
  CHECK_THROWS_WITH(five.update_state(f32({1, 0}, {2}), f32({0.3, 0.6}, {2})), Contains("class_id"));
}

TEST_CASE("F1Score and FBetaScore: Keras's argument checks and input rules", "[metrics]") {
  CHECK_THROWS_WITH(metrics::FBetaScore({.average = "samples"}), Contains("FBetaScore") && Contains("\"samples\""));
  CHECK_THROWS_WITH(metrics::F1Score({.average = "samples"}), Contains("F1Score") && Contains("average"));
  CHECK_THROWS_WITH(metrics::FBetaScore({.beta = 0.0}), Contains("beta") && Contains("> 0"));
  CHECK_THROWS_WITH(metrics::FBetaScore({.threshold = 0.0}), Contains("0 < threshold <= 1"));
  CHECK_THROWS_WITH(metrics::F1Score({.threshold = 1.5}), Contains("0 < threshold <= 1"));
  CHECK_NOTHROW(metrics::F1Score({.threshold = 1.0}));
  // Keras wants Python floats: beta=2 (an int) is an error there, so an integer in a config is too.
  CHECK_THROWS_WITH(from_config("FBetaScore", {{"beta", 2}}), Contains("beta") && Contains("float"));
  CHECK_THROWS_WITH(from_config("F1Score", {{"threshold", 1}}), Contains("threshold") && Contains("float"));
  CHECK_THROWS_WITH(from_config("F1Score", {{"beta", 1.0}}), Contains("unknown config key \"beta\""));
  CHECK(metrics::F1Score().get_config() ==
        nlohmann::json({{"name", "f1_score"}, {"dtype", "float32"}, {"average", nullptr}, {"threshold", nullptr}}));
  CHECK(metrics::FBetaScore({.average = "micro", .beta = 0.5}).get_config()["beta"] == 0.5);

  metrics::F1Score f1;
  CHECK(value(f1) == 0.0f);  // no state before the first update
  CHECK(f1.variables().empty());
  const Tensor y = f32({1, 0, 0, 1, 0, 1}, {3, 2}), p = f32({0.8, 0.2, 0.3, 0.7, 0.6, 0.4}, {3, 2});
  f1.update_state(y, p);
  REQUIRE(f1.variables().size() == 4);
  CHECK(f1.variables()[3].name() == "f1_score/intermediate_weights");
  CHECK(f1.result().shape() == Shape{2});
  CHECK_THROWS_WITH(f1.update_state(f32({1, 0, 1}, {3}), f32({0.8, 0.2, 0.3}, {3})), Contains("2D inputs"));
  CHECK_THROWS_WITH(f1.update_state(y, f32({0.8, 0.2, 0.3, 0.7, 0.6, 0.4}, {2, 3})), Contains("(2, 3)"));
  CHECK_THROWS_WITH(f1.update_state(y, p, f32({1, 2, 3}, {3, 1})), Contains("one weight per sample"));
  CHECK_THROWS_WITH(f1.update_state(f32({1, 0, 0, 1, 0, 1}, {2, 3}), f32({0.8, 0.2, 0.3, 0.7, 0.6, 0.4}, {2, 3})),
                    Contains("3 classes, but the state holds 2"));
  metrics::F1Score micro({.average = "micro"});
  micro.update_state(y, p);
  CHECK(micro.variables()[0].shape() == Shape{});
  micro.update_state(f32({1, 0, 0}, {1, 3}), f32({0.8, 0.1, 0.1}, {1, 3}));  // micro counts need no class count
}

TEST_CASE("R2Score: Keras's argument checks, lazily built state, adjusted score", "[metrics]") {
  CHECK_THROWS_WITH(metrics::R2Score({.class_aggregation = "median"}),
                    Contains("class_aggregation") && Contains("\"median\""));
  CHECK_THROWS_WITH(metrics::R2Score({.num_regressors = -1}), Contains("num_regressors") && Contains(">= 0"));
  CHECK(from_config("R2Score", {{"class_aggregation", nullptr}})->get_config()["class_aggregation"].is_null());
  metrics::R2Score r2;
  CHECK(r2.variables().size() == 1);  // num_samples; the rest at the first update
  CHECK(value(r2) == 0.0f);
  const Tensor y = f32({1, 2, 3, 4}, {4, 1}), p = f32({1.5, 2, 2.5, 4}, {4, 1});
  r2.update_state(y, p);
  REQUIRE(r2.variables().size() == 5);
  CHECK(r2.variables()[3].name() == "r2_score/residual");
  CHECK(value(r2) == Approx(1 - 0.5 / 5.0).epsilon(1e-6));
  CHECK_THROWS_WITH(r2.update_state(f32({1, 2, 3, 4}, {2, 2}), f32({1, 2, 3, 4}, {2, 2})),
                    Contains("2 outputs, but the state holds 1"));
  CHECK_THROWS_WITH(r2.update_state(f32({1, 2}, {1, 1, 2}), f32({1, 2}, {1, 1, 2})), Contains("2D inputs"));
  CHECK_THROWS_WITH(r2.update_state(y, p, f32({1, 2, 3}, {3})), Contains("sample_weight of shape (3,)"));
  // Adjusted: n = 4 entries, p = 1 regressor: 1 - (1 - R2) (n - 1) / (n - p - 1).
  metrics::R2Score adjusted({.num_regressors = 1});
  adjusted.update_state(y, p);
  CHECK(value(adjusted) == Approx(1 - (0.5 / 5.0) * 3 / 2).epsilon(1e-6));
  // p >= n - 1: the plain score (Keras warns and falls back).
  metrics::R2Score too_many({.num_regressors = 3});
  too_many.update_state(y, p);
  CHECK(value(too_many) == Approx(1 - 0.5 / 5.0).epsilon(1e-6));
}
