// The metrics beyond the first fourteen as Keras code names them: metrics::get (compile's strings) resolves
// what keras.metrics.get resolves (and refuses what it refuses), and compile/fit log them under those names,
// a metric with several values (F1Score without average) as name_0, name_1, ...
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "framework/ember.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using Catch::Matchers::Contains;

namespace {

Tensor rand_input(const Shape& shape, uint64_t seed) {
  return random::uniform(shape, {.minval = -1, .maxval = 1, .seed = seed});
}

}  // namespace

TEST_CASE("metrics::get resolves the Keras names of the loss-based metrics, named after the identifier",
          "[metrics]") {
  // Every name keras.metrics.get (Keras 3.15) maps to these classes: class names, snake_case, aliases.
  const std::vector<std::pair<std::string, std::string>> names = {
      {"mape", "MeanAbsolutePercentageError"},
      {"MAPE", "MeanAbsolutePercentageError"},
      {"mean_absolute_percentage_error", "MeanAbsolutePercentageError"},
      {"MeanAbsolutePercentageError", "MeanAbsolutePercentageError"},
      {"cosine_similarity", "CosineSimilarity"},
      {"CosineSimilarity", "CosineSimilarity"},
      {"log_cosh_error", "LogCoshError"},
      {"LogCoshError", "LogCoshError"},
      {"binary_crossentropy", "BinaryCrossentropy"},
      {"bce", "BinaryCrossentropy"},
      {"BCE", "BinaryCrossentropy"},
      {"BinaryCrossentropy", "BinaryCrossentropy"},
      {"categorical_crossentropy", "CategoricalCrossentropy"},
      {"CategoricalCrossentropy", "CategoricalCrossentropy"},
      {"sparse_categorical_crossentropy", "SparseCategoricalCrossentropy"},
      {"SparseCategoricalCrossentropy", "SparseCategoricalCrossentropy"},
      {"kl_divergence", "KLDivergence"},
      {"KLDivergence", "KLDivergence"},
      {"hinge", "Hinge"},
      {"Hinge", "Hinge"},
      {"squared_hinge", "SquaredHinge"},
      {"SquaredHinge", "SquaredHinge"},
      {"categorical_hinge", "CategoricalHinge"},
      {"CategoricalHinge", "CategoricalHinge"},
      {"msle", "MeanSquaredLogarithmicError"},
      {"MSLE", "MeanSquaredLogarithmicError"},
      {"mean_squared_logarithmic_error", "MeanSquaredLogarithmicError"},
      {"MeanSquaredLogarithmicError", "MeanSquaredLogarithmicError"},
      {"poisson", "Poisson"},
      {"Poisson", "Poisson"}};
  for (const auto& [id, cls] : names) {
    INFO(id);
    metrics::MetricPtr m = metrics::get(id);
    CHECK(m->class_name() == cls);
    CHECK(m->name() == id);
    CHECK(m->direction() == (cls == "CosineSimilarity" ? "up" : "down"));
  }
  // Loss names that keras.metrics.get does not know ("Could not interpret metric identifier").
  for (const char* id : {"kld", "KLD", "logcosh", "log_cosh", "kullback_leibler_divergence", "crossentropy"}) {
    INFO(id);
    CHECK_THROWS_WITH(metrics::get(id), Contains("Unknown metric \"" + std::string(id) + "\""));
  }
  // Default names, as Keras's constructors give them (LogCoshError's is "logcosh").
  CHECK(metrics::LogCoshError().name() == "logcosh");
  CHECK(metrics::KLDivergence().name() == "kl_divergence");
  CHECK(metrics::MeanAbsolutePercentageError().name() == "mean_absolute_percentage_error");
  CHECK(metrics::SparseCategoricalCrossentropy().name() == "sparse_categorical_crossentropy");
  CHECK(metrics::MeanSquaredLogarithmicError().name() == "mean_squared_logarithmic_error");
  CHECK(metrics::Poisson().name() == "poisson");
  CHECK(metrics::SquaredHinge().name() == "squared_hinge");
  CHECK(metrics::CategoricalHinge().name() == "categorical_hinge");
}

TEST_CASE("compile and fit log the loss-based metrics under their string names", "[metrics][fit]") {
  backend::clear_session();
  random::set_seed(7);
  Sequential model({layers::Input({4}), layers::Dense(1, {.activation = "sigmoid"})});
  model.compile({.optimizer = optimizers::SGD({.learning_rate = 0.1}),
                 .loss = "binary_crossentropy",
                 .metrics = {"binary_crossentropy", "bce", "mape", "kl_divergence", "hinge", "log_cosh_error",
                             "cosine_similarity"}});
  const Tensor x = rand_input({16, 4}, 1);
  const Tensor y = ops::cast(ops::greater(ops::reduce_sum(x, 1, true), Tensor::scalar(0.0f)), DType::Float32);
  const Tensor p0 = model.predict(x, {.verbose = 0});
  // One batch: the metrics see the predictions the step's loss was computed from.
  History h = model.fit(x, y, {.batch_size = 16, .epochs = 1, .verbose = 0, .shuffle = false});
  for (const char* key : {"loss", "binary_crossentropy", "bce", "mape", "kl_divergence", "hinge", "log_cosh_error",
                          "cosine_similarity"}) {
    INFO(key);
    REQUIRE(h.history.count(key) == 1);
    CHECK(std::isfinite(h.history.at(key)[0]));
  }
  CHECK(h.history.size() == 8);
  const double loss = h.history.at("loss")[0];
  CHECK(h.history.at("binary_crossentropy")[0] == Approx(loss).epsilon(1e-6));
  CHECK(h.history.at("bce")[0] == Approx(loss).epsilon(1e-6));
  auto metric_on = [&](metrics::Metric&& m) {
    m.update_state(y, p0);
    return static_cast<double>(m.result().item<float>());
  };
  CHECK(h.history.at("mape")[0] == Approx(metric_on(metrics::MeanAbsolutePercentageError())).epsilon(1e-6));
  CHECK(h.history.at("hinge")[0] == Approx(metric_on(metrics::Hinge())).epsilon(1e-6));
  CHECK(h.history.at("kl_divergence")[0] == Approx(metric_on(metrics::KLDivergence())).epsilon(1e-6));
  // One output per sample: every cosine is +-1 (or 0 for a zero label).
  CHECK(h.history.at("cosine_similarity")[0] == Approx(metric_on(metrics::CosineSimilarity())).epsilon(1e-6));
  // evaluate logs them too, under the same names, from the trained model's predictions.
  const Tensor p1 = model.predict(x, {.verbose = 0});
  Logs scores = model.evaluate(x, y, {.batch_size = 16, .verbose = 0});
  metrics::MeanAbsolutePercentageError mape;
  mape.update_state(y, p1);
  CHECK(scores.at("mape") == Approx(mape.result().item<float>()).epsilon(1e-6));
  CHECK(scores.at("mape") != Approx(h.history.at("mape")[0]).epsilon(1e-6));  // the step changed the model
  CHECK(scores.at("bce") == Approx(scores.at("loss")).epsilon(1e-6));
}

TEST_CASE("metrics::get resolves the confusion counts; the metrics at a target rate need their target", "[metrics]") {
  const std::vector<std::pair<std::string, std::string>> names = {
      {"true_positives", "TruePositives"},   {"TruePositives", "TruePositives"},
      {"false_positives", "FalsePositives"}, {"FalsePositives", "FalsePositives"},
      {"true_negatives", "TrueNegatives"},   {"TrueNegatives", "TrueNegatives"},
      {"false_negatives", "FalseNegatives"}, {"FalseNegatives", "FalseNegatives"}};
  for (const auto& [id, cls] : names) {
    INFO(id);
    metrics::MetricPtr m = metrics::get(id);
    CHECK(m->class_name() == cls);
    CHECK(m->name() == id);
    CHECK(m->direction().empty());  // Keras's counts have no _direction
  }
  // The metrics at a target rate need that rate: Keras's get fails to construct them from a name too.
  for (const auto& [id, arg] : std::vector<std::pair<std::string, std::string>>{
           {"precision_at_recall", "recall"},
           {"RecallAtPrecision", "precision"},
           {"sensitivity_at_specificity", "specificity"},
           {"SpecificityAtSensitivity", "sensitivity"}}) {
    INFO(id);
    CHECK_THROWS_WITH(metrics::get(id), Contains("missing the required argument " + arg));
  }
  for (const char* cls : {"PrecisionAtRecall", "RecallAtPrecision", "SensitivityAtSpecificity", "SpecificityAtSensitivity"}) {
    INFO(cls);
    const std::string key = std::string(cls) == "PrecisionAtRecall"          ? "recall"
                            : std::string(cls) == "RecallAtPrecision"        ? "precision"
                            : std::string(cls) == "SensitivityAtSpecificity" ? "specificity"
                                                                             : "sensitivity";
    metrics::MetricPtr m = metrics::deserialize({{"class_name", cls}, {"config", {{key, 0.25}}}});
    CHECK(m->class_name() == cls);
    CHECK(m->direction() == "up");
    CHECK(m->get_config()[key] == 0.25);
  }
}

TEST_CASE("metrics::get resolves the F-score and R2 metrics", "[metrics]") {
  const std::vector<std::pair<std::string, std::string>> names = {
      {"f1_score", "F1Score"},       {"F1Score", "F1Score"}, {"f_beta_score", "FBetaScore"},
      {"FBetaScore", "FBetaScore"}, {"r2_score", "R2Score"}, {"R2Score", "R2Score"}};
  for (const auto& [id, cls] : names) {
    INFO(id);
    metrics::MetricPtr m = metrics::get(id);
    CHECK(m->class_name() == cls);
    CHECK(m->name() == id);
    CHECK(m->direction() == "up");
  }
  // FBetaScore's default name is "fbeta_score", but Keras's registry knows only "f_beta_score".
  CHECK(metrics::FBetaScore().name() == "fbeta_score");
  CHECK(metrics::F1Score().name() == "f1_score");
  CHECK_THROWS_WITH(metrics::get("fbeta_score"), Contains("Unknown metric \"fbeta_score\""));
}

TEST_CASE("fit logs a metric with several values as name_0, name_1, ...", "[metrics][fit]") {
  backend::clear_session();
  random::set_seed(11);
  Sequential model({layers::Input({4}), layers::Dense(3, {.activation = "softmax"})});
  model.compile({.optimizer = optimizers::SGD({.learning_rate = 0.05}),
                 .loss = "categorical_crossentropy",
                 .metrics = {"f1_score", metrics::FBetaScore({.average = "macro", .beta = 2.0}), "true_positives",
                             metrics::R2Score({.class_aggregation = std::nullopt}), metrics::PrecisionAtRecall(0.5),
                             metrics::TruePositives({.thresholds = std::vector<double>{0.2, 0.5}, .name = "tp2"})}});
  const Tensor x = rand_input({12, 4}, 2);
  const Tensor y = ops::one_hot(ops::argmax(ops::slice(x, {0, 0}, {-1, 3}), 1), 3);  // the largest of the first three inputs
  const Tensor p0 = model.predict(x, {.verbose = 0});
  History h = model.fit(x, y, {.batch_size = 12, .epochs = 1, .verbose = 0, .shuffle = false});
  std::vector<std::string> keys;
  for (const auto& [k, v] : h.history) keys.push_back(k);
  CHECK(keys == std::vector<std::string>{"f1_score_0", "f1_score_1", "f1_score_2", "fbeta_score", "loss",
                                         "precision_at_recall", "r2_score_0", "r2_score_1", "r2_score_2",
                                         "tp2_0", "tp2_1", "true_positives"});
  metrics::F1Score f1;
  f1.update_state(y, p0);
  const std::vector<float> per_class = f1.result().to_vector<float>();
  REQUIRE(per_class.size() == 3);
  for (size_t i = 0; i < 3; ++i) CHECK(h.history.at("f1_score_" + std::to_string(i))[0] == Approx(per_class[i]).margin(1e-6));
  metrics::TruePositives tp;
  tp.update_state(y, p0);
  CHECK(h.history.at("true_positives")[0] == tp.result().item<float>());
}
