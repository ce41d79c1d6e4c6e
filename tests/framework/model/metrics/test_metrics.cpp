// Metrics beyond the Keras golden values (test_metric_fixtures.cpp): compile-style name resolution,
// state and tapes, configs, error cases, and AUC's two bucket-counting paths agreeing.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "framework/ember.h"
#include "framework/ops/dispatch.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using Catch::Matchers::Contains;
using testing::make;

namespace {

Tensor f32(const std::vector<double>& v, const Shape& s) { return make(v, s, DType::Float32); }
Tensor i32(const std::vector<double>& v, const Shape& s) { return make(v, s, DType::Int32); }
float value(const metrics::Metric& m) { return m.result().item<float>(); }

}  // namespace

TEST_CASE("metrics::get resolves \"accuracy\" from the loss, keeping the name", "[metrics]") {
  losses::SparseCategoricalCrossentropy scce({.from_logits = true});
  losses::BinaryCrossentropy bce;
  losses::CategoricalCrossentropy cce;
  losses::MeanSquaredError mse;
  CHECK(metrics::get("accuracy", &scce)->class_name() == "SparseCategoricalAccuracy");
  CHECK(metrics::get("accuracy", &bce)->class_name() == "BinaryAccuracy");
  CHECK(metrics::get("accuracy", &cce)->class_name() == "CategoricalAccuracy");
  CHECK(metrics::get("accuracy", &scce)->name() == "accuracy");
  metrics::MetricPtr acc = metrics::get("acc", &scce);
  CHECK(acc->name() == "acc");
  CHECK(metrics::get("Accuracy", &bce)->class_name() == "BinaryAccuracy");  // any case, as Keras's .lower()
  // Multi-label outputs with BinaryCrossentropy: the loss decides (Keras 3's shapes would say categorical).
  metrics::MetricPtr multi = metrics::get("accuracy", &bce);
  multi->update_state(f32({1, 0, 1, 1}, {2, 2}), f32({0.9, 0.2, 0.4, 0.8}, {2, 2}));
  CHECK(value(*multi) == 0.75f);
  // Another loss: the shapes of the first batch decide (Keras 3's rule), then the choice stays.
  metrics::MetricPtr by_shape = metrics::get("accuracy", &mse);
  CHECK(by_shape->class_name() == "Accuracy");  // not resolved yet
  by_shape->update_state(i32({2, 0}, {2}), f32({0.1, 0.2, 0.7, 0.6, 0.3, 0.1}, {2, 3}));
  CHECK(by_shape->class_name() == "SparseCategoricalAccuracy");
  CHECK(value(*by_shape) == 1.0f);
  CHECK(by_shape->clone()->class_name() == "SparseCategoricalAccuracy");
  CHECK(metrics::get("accuracy")->clone()->class_name() == "Accuracy");
}

TEST_CASE("metrics::get resolves Keras metric names, named after the identifier", "[metrics]") {
  const std::vector<std::pair<std::string, std::string>> names = {
      {"mse", "MeanSquaredError"}, {"MSE", "MeanSquaredError"}, {"mae", "MeanAbsoluteError"},
      {"mean_squared_error", "MeanSquaredError"}, {"root_mean_squared_error", "RootMeanSquaredError"},
      {"auc", "AUC"}, {"AUC", "AUC"}, {"precision", "Precision"}, {"Recall", "Recall"},
      {"binary_accuracy", "BinaryAccuracy"}, {"categorical_accuracy", "CategoricalAccuracy"},
      {"sparse_categorical_accuracy", "SparseCategoricalAccuracy"},
      {"top_k_categorical_accuracy", "TopKCategoricalAccuracy"},
      {"sparse_top_k_categorical_accuracy", "SparseTopKCategoricalAccuracy"}, {"mean", "Mean"}, {"sum", "Sum"}};
  for (const auto& [id, cls] : names) {
    INFO(id);
    metrics::MetricPtr m = metrics::get(id);
    CHECK(m->class_name() == cls);
    CHECK(m->name() == id);
  }
  CHECK_THROWS_WITH(metrics::get("f1"), Contains("Unknown metric \"f1\"") && Contains("sparse_categorical_accuracy"));
}

TEST_CASE("Metric state: non-trainable float32 variables, reset, clone, direction", "[metrics]") {
  metrics::AUC auc;
  REQUIRE(auc.variables().size() == 4);
  CHECK(auc.variables()[0].name() == "auc/true_positives");
  CHECK(auc.variables()[3].name() == "auc/false_negatives");
  for (const Variable& v : auc.variables()) {
    CHECK_FALSE(v.trainable());
    CHECK(v.dtype() == DType::Float32);
    CHECK(v.shape() == Shape{200});
  }
  auc.update_state(f32({0, 1, 1, 0}, {4}), f32({0.1, 0.8, 0.6, 0.7}, {4}));
  CHECK(value(auc) == Approx(0.75).epsilon(1e-6));
  metrics::MetricPtr copy = auc.clone();
  CHECK(value(*copy) == 0.0f);  // fresh state
  CHECK(copy->get_config() == auc.get_config());
  auc.reset_state();
  CHECK(value(auc) == 0.0f);
  CHECK(auc.direction() == "up");
  CHECK(metrics::MeanSquaredError().direction() == "down");

  metrics::Mean mean({.name = "loss"});
  mean.update_state(f32({1, 2, 3}, {3}));
  mean.update_state(f32({4}, {1}), f32({3}, {1}));
  CHECK(value(mean) == Approx((1 + 2 + 3 + 12) / 6.0));
  CHECK(mean.variables()[0].name() == "loss/total");
  CHECK(mean.variables()[1].name() == "loss/count");
  // Keras's trainer tracks the loss as a scalar weighted by the batch size.
  metrics::Mean loss_tracker({.name = "loss"});
  loss_tracker.update_state(f32({0.5}, {}), f32({128}, {}));
  loss_tracker.update_state(f32({2.0}, {}), f32({32}, {}));
  CHECK(value(loss_tracker) == Approx((0.5 * 128 + 2.0 * 32) / 160));
  metrics::Sum sum;
  sum.update_state(f32({1, 2, 3, 4}, {2, 2}), f32({1, 0.5}, {2}));
  CHECK(value(sum) == 6.5f);
  // Mean takes values: through a Metric reference, update_state(y_true, y_pred) is an error.
  metrics::Metric& as_metric = mean;
  CHECK_THROWS_WITH(as_metric.update_state(f32({1}, {1}), f32({1}, {1})), Contains("update_state(values"));
}

TEST_CASE("Metric updates run outside every tape", "[metrics]") {
  const Tensor y_pred = f32({0.2, 0.9, 0.4}, {3, 1});
  metrics::BinaryAccuracy acc;
  metrics::Mean mean;
  GradientTape tape({.persistent = true});
  tape.watch(y_pred);
  acc.update_state(f32({0, 1, 1}, {3, 1}), y_pred);
  mean.update_state(ops::square(y_pred));
  CHECK_FALSE(tape.gradient(mean.result(), {y_pred})[0].defined());
  CHECK_FALSE(tape.gradient(acc.result(), {y_pred})[0].defined());
  CHECK(value(acc) == Approx(2.0 / 3));
}

namespace {
int mean_update_ops = 0;
void count_mean_update_ops(const OpRecord&) { ++mean_update_ops; }
}  // namespace

TEST_CASE("Mean's update of a scalar with a scalar weight (the loss tracker's) runs three ops", "[metrics]") {
  // values * weight and the two additions: no broadcast of the weight, no sum over a scalar.
  metrics::Mean mean;
  mean.update_state(Tensor::scalar(2.0f), Tensor::scalar(8.0f));
  const int hook = add_op_hook(count_mean_update_ops);
  mean_update_ops = 0;
  mean.update_state(Tensor::scalar(0.5f), Tensor::scalar(4.0f));
  remove_op_hook(hook);
  CHECK(mean_update_ops == 3);
  CHECK(value(mean) == Approx((2.0 * 8 + 0.5 * 4) / 12));
}

TEST_CASE("reset_state runs no op, and the state it restores is not changed by later updates", "[metrics]") {
  // train_on_batch resets the metrics at every step: each variable takes back the zeros it was made with.
  metrics::Mean mean;
  mean.update_state(Tensor::scalar(2.0f), Tensor::scalar(8.0f));
  const int hook = add_op_hook(count_mean_update_ops);
  mean_update_ops = 0;
  mean.reset_state();
  remove_op_hook(hook);
  CHECK(mean_update_ops == 0);
  CHECK(value(mean) == 0);
  for (int i = 0; i < 2; ++i) {
    mean.update_state(Tensor::scalar(3.0f));
    CHECK(value(mean) == Approx(3.0));
    mean.reset_state();
    CHECK(value(mean) == 0);
    for (const Variable& v : mean.variables()) CHECK(v.value().item<float>() == 0);
  }
}

TEST_CASE("Precision and Recall with several thresholds give one value per threshold", "[metrics]") {
  metrics::Precision p({.thresholds = std::vector<double>{0.3, 0.7}});
  p.update_state(f32({1, 0, 1, 0}, {4}), f32({0.5, 0.5, 0.9, 0.1}, {4}));
  CHECK(p.result().shape() == Shape{2});
  const std::vector<float> r = p.result().to_vector<float>();
  CHECK(r[0] == Approx(2.0 / 3));
  CHECK(r[1] == 1.0f);
  CHECK(p.get_config()["thresholds"] == nlohmann::json({0.3, 0.7}));
  CHECK(metrics::Recall().get_config()["thresholds"].is_null());
}

TEST_CASE("AUC's bucket counts agree between the dense and the segment-sum paths", "[metrics]") {
  // 30,000 predictions x 200 thresholds exceed the dense limit, so one update takes the segment-sum
  // path; the same data in chunks of 3,000 takes the dense one.
  const int64_t n = 30000, chunk = 3000;
  std::vector<double> p = testing::uniform_values(n, 11), t = testing::uniform_values(n, 12), w = testing::uniform_values(n, 13);
  for (int64_t i = 0; i < n; ++i) {
    p[i] = std::round((p[i] + 1) * 500) / 1000;  // in [0, 1], on a grid that hits thresholds exactly
    t[i] = t[i] > 0.2 * p[i] ? 1 : 0;
    w[i] = w[i] + 1.5;
  }
  for (const char* curve : {"ROC", "PR"}) {
    metrics::AUC whole({.curve = curve}), parts({.curve = curve});
    whole.update_state(f32(t, {n}), f32(p, {n}), f32(w, {n}));
    for (int64_t s = 0; s < n; s += chunk) {
      auto slice = [&](const std::vector<double>& v) { return std::vector<double>(v.begin() + s, v.begin() + s + chunk); };
      parts.update_state(f32(slice(t), {chunk}), f32(slice(p), {chunk}), f32(slice(w), {chunk}));
    }
    INFO(curve);
    CHECK(value(whole) == Approx(value(parts)).epsilon(1e-6));
    // The counts are sums of ~45,000 in total, summed in different orders (and tn, fn are differences
    // of two such sums, as in Keras): they agree to a few float32 ulps of the total.
    for (size_t k = 0; k < 4; ++k) {
      const std::vector<float> a = whole.variables()[k].value().to_vector<float>();
      const std::vector<float> b = parts.variables()[k].value().to_vector<float>();
      for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == Approx(b[i]).epsilon(1e-6).margin(2e-2));
    }
  }
}

TEST_CASE("Metric errors name the metric and what was given", "[metrics][errors]") {
  CHECK_THROWS_WITH(metrics::Precision({.thresholds = std::vector<double>{0.5, 1.2}}), Contains("Precision") && Contains("1.2"));
  CHECK_THROWS_WITH(metrics::AUC({.num_thresholds = 1}), Contains("num_thresholds"));
  CHECK_THROWS_WITH(metrics::AUC({.curve = "XY"}), Contains("invalid curve \"XY\""));
  CHECK_THROWS_WITH(metrics::AUC({.summation_method = "trapezoid"}), Contains("summation_method"));
  CHECK_THROWS_WITH(metrics::TopKCategoricalAccuracy({.k = 0}), Contains("k must be a positive integer"));

  const Tensor probs = f32({0.1, 0.2, 0.7, 0.3, 0.3, 0.4}, {2, 3});
  metrics::SparseCategoricalAccuracy sca;
  CHECK_THROWS_WITH(sca.update_state(i32({0, 1, 2}, {3}), probs),
                    Contains("SparseCategoricalAccuracy") && Contains("(3,)") && Contains("(2, 3)"));
  metrics::CategoricalAccuracy ca;
  CHECK_THROWS_WITH(ca.update_state(i32({0, 1}, {2}), probs), Contains("CategoricalAccuracy") && Contains("(2,)"));
  metrics::Precision prec({.class_id = 3});
  CHECK_THROWS_WITH(prec.update_state(probs, probs), Contains("class_id 3"));
  metrics::Recall rec({.top_k = 4});
  CHECK_THROWS_WITH(rec.update_state(probs, probs), Contains("top_k"));
  metrics::AUC auc;
  CHECK_THROWS_WITH(auc.update_state(f32({1, 0}, {2}), f32({0.2, 0.3, 0.4}, {3})), Contains("AUC") && Contains("(3,)"));
  CHECK_THROWS_WITH(auc.update_state(f32({1, 0}, {2}), f32({0.2, 0.3}, {2}), f32({1, 2, 3}, {3})),
                    Contains("sample_weight of shape (3,)"));
  metrics::MeanSquaredError mse;
  CHECK_THROWS_WITH(mse.update_state(f32({1, 2}, {2}), probs), Contains("MeanSquaredError") && Contains("(2, 3)"));
  CHECK_THROWS_WITH(mse.update_state(probs, probs, f32({1, 2, 3}, {3})), Contains("sample_weight of shape (3,)"));
  CHECK_THROWS_WITH(metrics::deserialize({{"class_name", "AUC"}, {"config", {{"num_labels", 4}}}}),
                    Contains("num_labels is needed only when multi_label is true"));
  CHECK_THROWS_WITH(metrics::deserialize({{"class_name", "Mean"}, {"config", {{"bogus", 1}}}}),
                    Contains("unknown config key \"bogus\""));
}
