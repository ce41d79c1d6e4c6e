// AUC's multi_label, num_labels and label_weights beyond the Keras golden values
// (test_metric_fixtures.cpp): the multi-label result against label AUCs computed one column at a time,
// the state's lazy build, both bucket-counting paths, configs, and the errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "framework/ember.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using Catch::Matchers::Contains;
using nlohmann::json;
using testing::make;

namespace {

Tensor f32(const std::vector<double>& v, const Shape& s) { return make(v, s, DType::Float32); }
float value(const metrics::Metric& m) { return m.result().item<float>(); }

// n samples of 3 labels, predicted with different skill (label 2 inversely), values on a 1/1000 grid that
// hits thresholds exactly; labels in {0, 1}, weights in [0.5, 2.5].
struct Data {
  std::vector<double> y_true, y_pred, weights;
};
Data make_data(int64_t n, uint32_t seed) {
  Data d{testing::uniform_values(n * 3, seed), testing::uniform_values(n * 3, seed + 1),
         testing::uniform_values(n, seed + 2)};
  const double skill[3] = {0.6, 0.15, -0.3};
  for (int64_t i = 0; i < n * 3; ++i) {
    d.y_true[i] = d.y_true[i] > 0 ? 1 : 0;
    const double p = 0.5 + skill[i % 3] * (d.y_true[i] - 0.5) + 0.3 * d.y_pred[i];
    d.y_pred[i] = std::round(std::clamp(p, 0.0, 1.0) * 1000) / 1000;
  }
  for (double& w : d.weights) w += 1.5;
  return d;
}

std::vector<double> column(const std::vector<double>& v, int64_t label) {
  std::vector<double> out;
  for (size_t i = static_cast<size_t>(label); i < v.size(); i += 3) out.push_back(v[i]);
  return out;
}

}  // namespace

TEST_CASE("AUC metric, multi_label: the mean of the label AUCs, or label_weights' weighted mean", "[metrics][auc]") {
  const int64_t n = 40;
  const Data d = make_data(n, 21);
  const std::vector<double> lw = {0.25, 1.0, 3.0};
  struct Config {
    const char* curve;
    const char* method;
    std::optional<std::vector<double>> thresholds;
  };
  for (const Config& cfg : {Config{"ROC", "interpolation", {}}, Config{"PR", "interpolation", {}},
                            Config{"PR", "minoring", {}}, Config{"PRGAIN", "majoring", {}},
                            Config{"ROC", "interpolation", std::vector<double>{0.2, 0.45, 0.5, 0.9}},
                            Config{"PR", "interpolation", std::vector<double>{0.3, 0.6}}}) {
    INFO(cfg.curve << " " << cfg.method << (cfg.thresholds ? " explicit thresholds" : ""));
    const metrics::AUCOptions base{.curve = cfg.curve, .summation_method = cfg.method, .thresholds = cfg.thresholds};
    metrics::AUCOptions mean_opts = base, weighted_opts = base;
    mean_opts.multi_label = weighted_opts.multi_label = true;
    weighted_opts.label_weights = lw;
    metrics::AUC mean(mean_opts), weighted(weighted_opts), flattened(base);
    // Two batches, so the per-label counts accumulate.
    const int64_t half = n / 2;
    for (int64_t b = 0; b < 2; ++b) {
      auto rows = [&](const std::vector<double>& v, int64_t width) {
        return std::vector<double>(v.begin() + b * half * width, v.begin() + (b + 1) * half * width);
      };
      const Tensor yt = f32(rows(d.y_true, 3), {half, 3}), yp = f32(rows(d.y_pred, 3), {half, 3});
      const Tensor sw = f32(rows(d.weights, 1), {half});
      mean.update_state(yt, yp, sw);
      weighted.update_state(yt, yp, sw);
      flattened.update_state(yt, yp, sw);
    }
    double sum = 0, weighted_sum = 0;
    std::vector<double> label_auc;
    for (int64_t l = 0; l < 3; ++l) {
      metrics::AUC one(base);
      one.update_state(f32(column(d.y_true, l), {n}), f32(column(d.y_pred, l), {n}), f32(d.weights, {n}));
      label_auc.push_back(value(one));
      sum += label_auc.back();
      weighted_sum += lw[static_cast<size_t>(l)] * label_auc.back();
    }
    INFO("label AUCs " << label_auc[0] << ", " << label_auc[1] << ", " << label_auc[2]);
    CHECK(value(mean) == Approx(sum / 3).epsilon(1e-6));
    CHECK(value(weighted) == Approx(weighted_sum / (0.25 + 1.0 + 3.0)).epsilon(1e-6));
    // The data is chosen so that these differ: a test of the mean is not a test of the flattened AUC.
    CHECK(std::abs(value(mean) - value(weighted)) > 1e-2);
    CHECK(std::abs(value(mean) - value(flattened)) > 1e-2);
  }
}

TEST_CASE("AUC metric, label_weights without multi_label weight each flattened entry by its label", "[metrics][auc]") {
  // Weighting the flattened entries by label is the same as sample weights of the predictions' shape.
  const int64_t n = 30;
  const Data d = make_data(n, 31);
  const std::vector<double> lw = {0.25, 1.0, 3.0};
  std::vector<double> full;
  for (int64_t i = 0; i < n * 3; ++i) full.push_back(d.weights[static_cast<size_t>(i / 3)] * lw[static_cast<size_t>(i % 3)]);
  for (const auto& thresholds : {std::optional<std::vector<double>>{}, std::optional<std::vector<double>>{{0.3, 0.6}}}) {
    metrics::AUC by_label({.thresholds = thresholds, .label_weights = lw}), by_sample({.thresholds = thresholds}),
        unweighted({.thresholds = thresholds});
    const Tensor yt = f32(d.y_true, {n, 3}), yp = f32(d.y_pred, {n, 3});
    by_label.update_state(yt, yp, f32(d.weights, {n}));
    by_sample.update_state(yt, yp, f32(full, {n, 3}));
    unweighted.update_state(yt, yp, f32(d.weights, {n}));
    CHECK(value(by_label) == Approx(value(by_sample)).epsilon(1e-6));
    CHECK(std::abs(value(by_label) - value(unweighted)) > 1e-2);
  }
}

TEST_CASE("AUC metric, multi_label state: [thresholds, labels], built at the first update or from num_labels", "[metrics][auc]") {
  metrics::AUC lazy({.num_thresholds = 7, .multi_label = true});
  CHECK(lazy.variables().empty());
  CHECK(lazy.built_num_labels() == 0);
  CHECK(value(lazy) == 0.0f);  // nothing accumulated yet
  lazy.reset_state();
  const Tensor yt = f32({1, 0, 0, 1, 1, 0, 0, 1}, {4, 2}), yp = f32({0.9, 0.2, 0.1, 0.3, 0.6, 0.55, 0.4, 0.8}, {4, 2});
  lazy.update_state(yt, yp);
  REQUIRE(lazy.variables().size() == 4);
  CHECK(lazy.built_num_labels() == 2);
  CHECK(lazy.variables()[0].name() == "auc/true_positives");
  CHECK(lazy.variables()[3].name() == "auc/false_negatives");
  for (const Variable& v : lazy.variables()) {
    CHECK(v.shape() == Shape{7, 2});
    CHECK_FALSE(v.trainable());
  }
  // By hand, thresholds (-eps, 1/6, ..., 5/6, 1 + eps), counts [threshold][label]. Label 0 (positives
  // 0.9, 0.6; negatives 0.1, 0.4): tpr 1,1,1,1,.5,.5,0 against fpr 1,.5,.5,0,0,0,0, AUC 1. Label 1
  // (positives 0.3, 0.8; negatives 0.2, 0.55): tpr 1,1,.5,.5,.5,0,0 against fpr 1,1,.5,.5,0,0,0, AUC
  // 0.5 * 1.5 / 2 + 0.5 * 1 / 2 = 0.625. The result is their mean.
  const std::vector<float> tp = lazy.variables()[0].value().to_vector<float>();
  CHECK(tp == std::vector<float>{2, 2, 2, 2, 2, 1, 2, 1, 1, 1, 1, 0, 0, 0});
  const std::vector<float> fp = lazy.variables()[1].value().to_vector<float>();
  CHECK(fp == std::vector<float>{2, 2, 1, 2, 1, 1, 0, 1, 0, 0, 0, 0, 0, 0});
  const std::vector<float> tn = lazy.variables()[2].value().to_vector<float>();
  CHECK(tn == std::vector<float>{0, 0, 1, 0, 1, 1, 2, 1, 2, 2, 2, 2, 2, 2});
  CHECK(value(lazy) == (1.0f + 0.625f) / 2);
  lazy.reset_state();
  CHECK(value(lazy) == 0.0f);
  CHECK(lazy.variables()[0].shape() == Shape{7, 2});  // reset keeps the built shape, as Keras
  lazy.update_state(yt, yp);
  CHECK(value(lazy) == (1.0f + 0.625f) / 2);

  metrics::AUC eager({.multi_label = true, .num_labels = 5});
  REQUIRE(eager.variables().size() == 4);
  CHECK(eager.variables()[2].shape() == Shape{200, 5});
  // num_labels = 0 is Keras's None: built at the first update, written back as 0.
  metrics::AUC zero({.multi_label = true, .num_labels = 0});
  CHECK(zero.variables().empty());
  CHECK(zero.get_config()["num_labels"] == 0);
  CHECK(metrics::AUC({.num_labels = 0}).get_config()["num_labels"] == 0);
  // A y_pred of [N, 1] against a y_true of [N] is one label (Keras counts it so too).
  metrics::AUC one({.multi_label = true});
  one.update_state(f32({0, 1, 1, 0}, {4}), f32({0.2, 0.6, 0.4, 0.5}, {4, 1}), f32({1, 2, 3, 4}, {4}));
  CHECK(one.variables()[0].shape() == Shape{200, 1});
  metrics::AUC single;
  single.update_state(f32({0, 1, 1, 0}, {4}), f32({0.2, 0.6, 0.4, 0.5}, {4}), f32({1, 2, 3, 4}, {4}));
  CHECK(value(one) == value(single));
}

TEST_CASE("AUC metric, multi_label bucket counts agree between the dense and the segment-sum paths", "[metrics][auc]") {
  // 8,000 x 3 predictions x 200 thresholds exceed the dense limit, so one update takes the segment-sum
  // path (one segment sum over every label); the same data in chunks of 1,000 takes the dense one.
  const int64_t n = 8000, chunk = 1000;
  const Data d = make_data(n, 41);
  for (const char* curve : {"ROC", "PR"}) {
    metrics::AUC whole({.curve = curve, .multi_label = true}), parts({.curve = curve, .multi_label = true});
    whole.update_state(f32(d.y_true, {n, 3}), f32(d.y_pred, {n, 3}), f32(d.weights, {n}));
    for (int64_t s = 0; s < n; s += chunk) {
      auto rows = [&](const std::vector<double>& v, int64_t width) {
        return std::vector<double>(v.begin() + s * width, v.begin() + (s + chunk) * width);
      };
      parts.update_state(f32(rows(d.y_true, 3), {chunk, 3}), f32(rows(d.y_pred, 3), {chunk, 3}),
                         f32(rows(d.weights, 1), {chunk}));
    }
    INFO(curve);
    CHECK(value(whole) == Approx(value(parts)).epsilon(1e-6));
    // Sums of ~12,000 per label in different orders (tn, fn: differences of two such sums, as in Keras).
    for (size_t k = 0; k < 4; ++k) {
      const std::vector<float> a = whole.variables()[k].value().to_vector<float>();
      const std::vector<float> b = parts.variables()[k].value().to_vector<float>();
      REQUIRE(a.size() == 600);
      for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == Approx(b[i]).epsilon(1e-6).margin(1e-2));
    }
    // Each label's counts are those of a single-label AUC of its column (itself on the segment-sum path).
    const std::vector<float> tp = whole.variables()[0].value().to_vector<float>();
    for (int64_t l = 0; l < 3; ++l) {
      metrics::AUC one({.curve = curve});
      one.update_state(f32(column(d.y_true, l), {n}), f32(column(d.y_pred, l), {n}), f32(d.weights, {n}));
      const std::vector<float> one_tp = one.variables()[0].value().to_vector<float>();
      for (size_t t = 0; t < one_tp.size(); ++t)
        CHECK(tp[t * 3 + static_cast<size_t>(l)] == Approx(one_tp[t]).epsilon(1e-6).margin(1e-2));
    }
  }
}

TEST_CASE("AUC metric, multi_label configs: Keras's keys, and Keras's serialized label_weights read back", "[metrics][auc]") {
  metrics::AUC auc({.curve = "PR", .multi_label = true, .num_labels = 3, .label_weights = std::vector<double>{0.1, 1, 2}});
  const json c = auc.get_config();
  CHECK(c["multi_label"] == true);
  CHECK(c["num_labels"] == 3);
  // Keras keeps label_weights as a float32 tensor: serialize_keras_object writes it this way.
  CHECK(c["label_weights"] ==
        json({{"class_name", "__tensor__"},
              {"config", {{"value", {static_cast<double>(0.1f), 1.0, 2.0}}, {"dtype", "float32"}}}}));
  const metrics::MetricPtr back = metrics::deserialize(metrics::serialize(auc));
  CHECK(back->get_config() == c);
  CHECK(dynamic_cast<metrics::AUC&>(*back).built_num_labels() == 3);
  CHECK(auc.clone()->get_config() == c);
  // A plain list (constructor arguments), a numpy array's form, and nulls.
  json plain = c;
  plain["label_weights"] = {0.1, 1, 2};
  CHECK(metrics::deserialize({{"class_name", "AUC"}, {"config", plain}})->get_config() == c);
  json numpy = c;
  numpy["label_weights"]["class_name"] = "__numpy__";
  CHECK(metrics::deserialize({{"class_name", "AUC"}, {"config", numpy}})->get_config() == c);
  const json defaults = metrics::AUC().get_config();
  CHECK(defaults["multi_label"] == false);
  CHECK(defaults["num_labels"].is_null());
  CHECK(defaults["label_weights"].is_null());
  CHECK(metrics::deserialize({{"class_name", "AUC"},
                              {"config", {{"multi_label", nullptr}, {"num_labels", nullptr}, {"label_weights", nullptr}}}})
            ->get_config() == defaults);
  // Flattened label weights keep multi_label false in the config.
  const json flat = metrics::AUC({.label_weights = std::vector<double>{2.0}}).get_config();
  CHECK(flat["multi_label"] == false);
  CHECK(flat["label_weights"]["config"]["value"] == json({2.0}));

  for (const json& bad : {json("0.5"), json({1, "x"}), json({{"class_name", "__bytes__"}, {"config", {{"value", {1}}}}}),
                          json({{"class_name", "__tensor__"}})}) {
    INFO(bad.dump());
    CHECK_THROWS_WITH(metrics::deserialize({{"class_name", "AUC"}, {"config", {{"label_weights", bad}}}}),
                      Contains("label_weights"));
  }
  CHECK_THROWS_WITH(metrics::deserialize({{"class_name", "AUC"}, {"config", {{"num_labels", 2.5}}}}),
                    Contains("num_labels"));
  CHECK_THROWS_WITH(metrics::deserialize({{"class_name", "AUC"}, {"config", {{"multi_label", "yes"}}}}),
                    Contains("multi_label"));
  CHECK_THROWS_WITH(metrics::deserialize({{"class_name", "AUC"}, {"config", {{"num_labels", 3}}}}),
                    Contains("num_labels is needed only when multi_label is true"));
}

TEST_CASE("AUC metric, multi_label and label_weights errors name the metric and the shapes", "[metrics][auc][errors]") {
  const Tensor yt = f32({1, 0, 0, 1, 1, 0}, {2, 3}), yp = f32({0.9, 0.2, 0.1, 0.3, 0.6, 0.5}, {2, 3});
  CHECK_THROWS_WITH(metrics::AUC({.num_labels = 3}), Contains("AUC 'auc'") && Contains("num_labels=3"));
  CHECK_THROWS_WITH(metrics::AUC({.multi_label = true, .num_labels = -2}), Contains("num_labels"));
  CHECK_THROWS_WITH(metrics::AUC({.multi_label = true, .num_labels = 3, .label_weights = std::vector<double>{1, 2}}),
                    Contains("AUC 'auc'") && Contains("label_weights of shape (2,)") && Contains("(3,)"));

  metrics::AUC ranked({.name = "ml", .multi_label = true});
  CHECK_THROWS_WITH(ranked.update_state(f32({1, 0, 1, 0}, {2, 1, 2}), f32({0.9, 0.2, 0.1, 0.3}, {2, 1, 2})),
                    Contains("AUC 'ml'") && Contains("rank 2") && Contains("(2, 1, 2)"));
  CHECK_THROWS_WITH(ranked.update_state(f32({1, 0}, {2}), f32({0.9, 0.2}, {2})),
                    Contains("AUC 'ml'") && Contains("rank 2") && Contains("(2,)"));
  CHECK(ranked.variables().empty());  // refused batches build nothing

  metrics::AUC changing({.multi_label = true});
  changing.update_state(yt, yp);
  CHECK_THROWS_WITH(changing.update_state(f32({1, 0}, {1, 2}), f32({0.4, 0.7}, {1, 2})),
                    Contains("AUC 'auc'") && Contains("(1, 2)") && Contains("(batch, 3)"));
  metrics::AUC declared({.multi_label = true, .num_labels = 2});
  CHECK_THROWS_WITH(declared.update_state(yt, yp), Contains("(2, 3)") && Contains("(batch, 2)"));
  metrics::AUC shapes({.multi_label = true});
  CHECK_THROWS_WITH(shapes.update_state(f32({1, 0}, {1, 2}), yp), Contains("AUC 'auc'") && Contains("(1, 2)") &&
                                                                        Contains("(2, 3)"));

  metrics::AUC weighted({.multi_label = true, .label_weights = std::vector<double>{1, 2}});
  CHECK_THROWS_WITH(weighted.update_state(yt, yp),
                    Contains("AUC 'auc'") && Contains("label_weights of shape (2,)") && Contains("(2, 3)"));
  CHECK(weighted.variables().empty());
  metrics::AUC flat({.label_weights = std::vector<double>{1, 2}});
  CHECK_THROWS_WITH(flat.update_state(yt, yp),
                    Contains("AUC 'auc'") && Contains("label_weights of shape (2,)") && Contains("(2, 3)"));
  // Keras broadcasts [1, L] label weights to y_pred: a rank-1 y_pred cannot take them.
  metrics::AUC rank1({.label_weights = std::vector<double>{1}});
  CHECK_THROWS_WITH(rank1.update_state(f32({1, 0}, {2}), f32({0.4, 0.7}, {2})),
                    Contains("label_weights of shape (1,)") && Contains("(2,)"));
}
