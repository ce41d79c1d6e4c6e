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
