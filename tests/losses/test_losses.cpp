// Losses beyond the Keras golden values (those are in test_loss_fixtures.cpp): names, options and
// configs, error cases, dtypes, and gradients through the tape.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "framework/ember.h"
#include "tests/support/grad_check.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using Catch::Matchers::Contains;
using testing::make;

namespace {

Tensor f32(const std::vector<double>& v, const Shape& s) { return make(v, s, DType::Float32); }
Tensor i32(const std::vector<double>& v, const Shape& s) { return make(v, s, DType::Int32); }

float scalar(const Tensor& t) { return t.item<float>(); }

}  // namespace

TEST_CASE("losses::get resolves Keras names and aliases", "[losses]") {
  const std::vector<std::pair<std::string, std::string>> names = {
      {"mse", "MeanSquaredError"},
      {"MSE", "MeanSquaredError"},
      {"mean_squared_error", "MeanSquaredError"},
      {"MeanSquaredError", "MeanSquaredError"},
      {"mae", "MeanAbsoluteError"},
      {"mean_absolute_error", "MeanAbsoluteError"},
      {"mape", "MeanAbsolutePercentageError"},
      {"huber", "Huber"},
      {"log_cosh", "LogCosh"},
      {"binary_crossentropy", "BinaryCrossentropy"},
      {"bce", "BinaryCrossentropy"},
      {"categorical_crossentropy", "CategoricalCrossentropy"},
      {"sparse_categorical_crossentropy", "SparseCategoricalCrossentropy"},
      {"kl_divergence", "KLDivergence"},
      {"kld", "KLDivergence"},
      {"hinge", "Hinge"},
      {"cosine_similarity", "CosineSimilarity"},
      {"msle", "MeanSquaredLogarithmicError"},
      {"MSLE", "MeanSquaredLogarithmicError"},
      {"mean_squared_logarithmic_error", "MeanSquaredLogarithmicError"},
      {"MeanSquaredLogarithmicError", "MeanSquaredLogarithmicError"},
      {"poisson", "Poisson"},
      {"Poisson", "Poisson"},
      {"squared_hinge", "SquaredHinge"},
      {"SquaredHinge", "SquaredHinge"},
      {"categorical_hinge", "CategoricalHinge"},
      {"CategoricalHinge", "CategoricalHinge"},
      {"binary_focal_crossentropy", "BinaryFocalCrossentropy"},
      {"BinaryFocalCrossentropy", "BinaryFocalCrossentropy"},
      {"categorical_focal_crossentropy", "CategoricalFocalCrossentropy"},
      {"CategoricalFocalCrossentropy", "CategoricalFocalCrossentropy"},
      {"dice", "Dice"},
      {"Dice", "Dice"},
      {"tversky", "Tversky"},
      {"Tversky", "Tversky"},
      {"circle", "Circle"},
      {"Circle", "Circle"},
      {"CategoricalGeneralizedCrossEntropy", "CategoricalGeneralizedCrossEntropy"},
  };
  for (const auto& [id, cls] : names) {
    INFO(id);
    losses::LossPtr l = losses::get(id);
    REQUIRE(l);
    CHECK(l->class_name() == cls);
    CHECK(l->reduction() == "sum_over_batch_size");
  }
  // Keras's compile wraps a function name under the identifier; a class name keeps its default name.
  CHECK(losses::get("mse")->name() == "mse");
  CHECK(losses::get("MeanSquaredError")->name() == "mean_squared_error");
  CHECK(losses::get(nlohmann::json("huber"))->class_name() == "Huber");
  CHECK(losses::get("msle")->name() == "msle");
  CHECK(losses::get("MeanSquaredLogarithmicError")->name() == "mean_squared_logarithmic_error");
  CHECK(losses::get("CategoricalHinge")->name() == "categorical_hinge");
  CHECK_THROWS_WITH(losses::get("nope"), Contains("Unknown loss \"nope\"") && Contains("sparse_categorical_crossentropy"));
}

TEST_CASE("\"crossentropy\" and \"ce\" pick their kind from the first call's shapes, as Keras 3's compile does",
          "[losses]") {
  const Tensor probs = Tensor::from_vector<float>({0.7f, 0.2f, 0.1f, 0.1f, 0.3f, 0.6f}, {2, 3});
  const Tensor sparse = Tensor::from_vector<int64_t>({0, 2}, {2});
  const Tensor one_hot = Tensor::from_vector<float>({0, 1, 0, 0, 0, 1}, {2, 3});
  const Tensor p1 = Tensor::from_vector<float>({0.8f, 0.3f}, {2, 1});
  const Tensor y1 = Tensor::from_vector<float>({1, 0}, {2, 1});
  struct Case {
    const char* id;
    Tensor y_true, y_pred;
    const char* cls;
  };
  for (const Case& c : {Case{"crossentropy", sparse, probs, "SparseCategoricalCrossentropy"},
                        Case{"CE", one_hot, probs, "CategoricalCrossentropy"},
                        Case{"ce", y1, p1, "BinaryCrossentropy"},
                        Case{"Crossentropy", Tensor::from_vector<int64_t>({0, 2}, {2, 1}), probs,
                             "SparseCategoricalCrossentropy"}}) {
    INFO(c.id << " -> " << c.cls);
    losses::LossPtr l = losses::get(c.id);
    CHECK(l->name() == c.id);
    CHECK(l->class_name() == "LossFunctionWrapper");
    const float got = (*l)(c.y_true, c.y_pred).item<float>();
    CHECK(l->class_name() == c.cls);
    CHECK(got == (*losses::get(std::string(c.cls)))(c.y_true, c.y_pred).item<float>());
    // The choice sticks: later calls use it whatever their shapes.
    CHECK(l->clone()->class_name() == c.cls);
  }
  // compile's "accuracy" then follows Keras 3's shape rule as well.
  Sequential model({layers::Input({3}), layers::Dense(3, {.activation = "softmax"})});
  model.compile({.optimizer = "sgd", .loss = "crossentropy", .metrics = {"accuracy"}});
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 3, 2, 1}, {2, 3});
  Logs logs = model.evaluate(x, sparse, {.verbose = 0});
  const Tensor pred = model.predict(x, {.verbose = 0});
  CHECK(logs.at("loss") == Approx((*losses::get("SparseCategoricalCrossentropy"))(sparse, pred).item<float>()));
  CHECK(logs.get("accuracy").has_value());
  CHECK(model.metrics().back()->class_name() == "SparseCategoricalAccuracy");
}

TEST_CASE("Loss options use Keras names, defaults and the API.md spelling", "[losses]") {
  losses::SparseCategoricalCrossentropy scce({.from_logits = true});
  CHECK(scce.from_logits());
  CHECK(scce.name() == "sparse_categorical_crossentropy");
  CHECK(scce.get_config() == nlohmann::json{{"name", "sparse_categorical_crossentropy"},
                                            {"reduction", "sum_over_batch_size"},
                                            {"from_logits", true},
                                            {"ignore_class", nullptr}});
  losses::Huber huber({.delta = 2.0, .reduction = "sum", .name = "h"});
  CHECK(huber.get_config() == nlohmann::json{{"name", "h"}, {"reduction", "sum"}, {"delta", 2.0}});
  CHECK(losses::MeanSquaredError({.reduction = "none"}).reduction() == "none");
  CHECK(losses::BinaryCrossentropy().get_config() == nlohmann::json{{"name", "binary_crossentropy"},
                                                                    {"reduction", "sum_over_batch_size"},
                                                                    {"from_logits", false},
                                                                    {"label_smoothing", 0.0},
                                                                    {"axis", -1}});
  CHECK_THROWS_WITH(losses::MeanSquaredError({.reduction = "average"}),
                    Contains("MeanSquaredError") && Contains("invalid reduction \"average\""));
  CHECK_THROWS_WITH(losses::BinaryCrossentropy({.label_smoothing = 1.5}), Contains("label_smoothing"));
}

TEST_CASE("Loss configs round-trip through serialize/deserialize and clone", "[losses]") {
  std::vector<losses::LossPtr> all = {
      std::make_shared<losses::MeanSquaredError>(losses::LossOptions{.reduction = "sum", .name = "a"}),
      std::make_shared<losses::MeanAbsoluteError>(),
      std::make_shared<losses::MeanAbsolutePercentageError>(),
      std::make_shared<losses::Huber>(losses::HuberOptions{.delta = 0.25}),
      std::make_shared<losses::LogCosh>(),
      std::make_shared<losses::BinaryCrossentropy>(
          losses::BinaryCrossentropyOptions{.from_logits = true, .label_smoothing = 0.1, .axis = 1}),
      std::make_shared<losses::CategoricalCrossentropy>(
          losses::CategoricalCrossentropyOptions{.label_smoothing = 0.2, .reduction = "none"}),
      std::make_shared<losses::SparseCategoricalCrossentropy>(
          losses::SparseCategoricalCrossentropyOptions{.from_logits = true, .ignore_class = -1}),
      std::make_shared<losses::KLDivergence>(),
      std::make_shared<losses::Hinge>(losses::LossOptions{.reduction = "mean_with_sample_weight"}),
      std::make_shared<losses::CosineSimilarity>(losses::CosineSimilarityOptions{.axis = 0}),
      std::make_shared<losses::MeanSquaredLogarithmicError>(losses::LossOptions{.name = "m"}),
      std::make_shared<losses::Poisson>(losses::LossOptions{.reduction = "sum"}),
      std::make_shared<losses::SquaredHinge>(),
      std::make_shared<losses::CategoricalHinge>(losses::LossOptions{.reduction = "none"}),
      std::make_shared<losses::BinaryFocalCrossentropy>(losses::BinaryFocalCrossentropyOptions{
          .apply_class_balancing = true, .alpha = 0.4, .gamma = 1.5, .from_logits = true, .axis = 0}),
      std::make_shared<losses::CategoricalFocalCrossentropy>(
          losses::CategoricalFocalCrossentropyOptions{.alpha = {0.2, 0.8}, .gamma = 3, .label_smoothing = 0.1}),
      std::make_shared<losses::CategoricalFocalCrossentropy>(losses::CategoricalFocalCrossentropyOptions{.alpha = 0.5}),
      std::make_shared<losses::Dice>(),
      std::make_shared<losses::Dice>(losses::DiceOptions{.reduction = "none", .axis = {1, 2}}),
      std::make_shared<losses::Tversky>(losses::TverskyOptions{.alpha = 0.3, .beta = 0.7, .axis = -1}),
      std::make_shared<losses::Tversky>(losses::TverskyOptions{.axis = {0}}),
      std::make_shared<losses::Circle>(losses::CircleOptions{.gamma = 32, .margin = 0.25, .remove_diagonal = false}),
      std::make_shared<losses::CategoricalGeneralizedCrossEntropy>(
          losses::CategoricalGeneralizedCrossEntropyOptions{.q = 0.2, .reduction = "sum"}),
  };
  for (const losses::LossPtr& l : all) {
    INFO(l->class_name());
    const nlohmann::json j = losses::serialize(*l);
    losses::LossPtr back = losses::deserialize(j);
    CHECK(back->class_name() == l->class_name());
    CHECK(back->get_config() == l->get_config());
    losses::LossPtr copy = l->clone();
    CHECK(copy.get() != l.get());
    CHECK(copy->get_config() == l->get_config());
  }
  // Keras writes reduction None as null.
  CHECK(losses::deserialize({{"class_name", "LogCosh"}, {"config", {{"reduction", nullptr}}}})->reduction() == "none");
  CHECK_THROWS_WITH(losses::deserialize({{"class_name", "Huber"}, {"config", {{"delta", 1.0}, {"alpha", 2}}}}),
                    Contains("Huber") && Contains("unknown config key \"alpha\""));
  CHECK_THROWS_WITH(losses::deserialize({{"class_name", "Hinge"}, {"config", {{"dtype", "float64"}}}}),
                    Contains("float32"));
  CHECK_THROWS_WITH(losses::deserialize({{"class_name", "mse"}, {"config", {}}}), Contains("Unknown loss"));
  CHECK_THROWS_AS(losses::deserialize(nlohmann::json::array()), InvalidArgument);
}

TEST_CASE("Labels that do not match the predictions are an InvalidArgument naming the loss and both shapes",
          "[losses][errors]") {
  const Tensor pred = f32({0.1, 0.2, 0.7, 0.3, 0.3, 0.4}, {2, 3});
  CHECK_THROWS_WITH(losses::MeanSquaredError()(f32({1, 2}, {2}), pred),
                    Contains("MeanSquaredError") && Contains("(2,)") && Contains("(2, 3)"));
  CHECK_THROWS_WITH(losses::CategoricalCrossentropy()(i32({0, 2}, {2}), pred),
                    Contains("CategoricalCrossentropy") && Contains("(2,)") && Contains("(2, 3)"));
  CHECK_THROWS_WITH(losses::BinaryCrossentropy()(f32({1, 0, 1, 0}, {2, 2}), pred),
                    Contains("BinaryCrossentropy") && Contains("(2, 2)") && Contains("(2, 3)"));
  CHECK_THROWS_WITH(losses::CategoricalHinge()(i32({0, 2}, {2}), pred),
                    Contains("CategoricalHinge") && Contains("(2,)") && Contains("(2, 3)"));
  CHECK_THROWS_WITH(losses::Poisson()(f32({1, 0, 1, 0}, {2, 2}), pred),
                    Contains("Poisson") && Contains("(2, 2)") && Contains("(2, 3)"));
  CHECK_THROWS_WITH(losses::CategoricalHinge()(f32({1}, {}), f32({0.5}, {})),
                    Contains("CategoricalHinge") && Contains("at least rank 1"));
  CHECK_THROWS_WITH(losses::SparseCategoricalCrossentropy()(f32({0, 0, 1, 1, 0, 0}, {2, 3}), pred),
                    Contains("SparseCategoricalCrossentropy") && Contains("(2, 3)") &&
                        Contains("CategoricalCrossentropy"));
  CHECK_THROWS_WITH(losses::SparseCategoricalCrossentropy()(i32({0, 1, 2}, {3}), pred),
                    Contains("(3,)") && Contains("(2, 3)"));
  CHECK_THROWS_WITH(losses::SparseCategoricalCrossentropy()(i32({0, 3}, {2}), pred),
                    Contains("SparseCategoricalCrossentropy") && Contains("outside the valid range [0, 3)"));
  CHECK_THROWS_WITH(losses::SparseCategoricalCrossentropy()(i32({-1, 0}, {2}), pred), Contains("valid range"));
  CHECK_THROWS_WITH(losses::SparseCategoricalCrossentropy({.axis = 0})(i32({0, 1}, {2}), pred),
                    Contains("only axis=-1"));
  CHECK_THROWS_WITH(losses::MeanSquaredError()(f32({1, 2, 3, 4, 5, 6}, {2, 3}), pred, f32({1, 2, 3}, {3, 1})),
                    Contains("MeanSquaredError") && Contains("sample_weight of shape (3, 1)"));
  CHECK_THROWS_WITH(losses::MeanSquaredError()(Tensor(), pred), Contains("MeanSquaredError") && Contains("y_true"));
}

TEST_CASE("Losses compute in float32 whatever the input dtype", "[losses][dtype]") {
  const std::vector<double> logits = {0.5, -1.25, 2.0, 0.75, 0.0, -0.5};
  const Tensor labels = i32({2, 0}, {2});
  losses::SparseCategoricalCrossentropy scce({.from_logits = true});
  const float reference = scalar(scce(labels, f32(logits, {2, 3})));
  for (DType dt : {DType::Float64, DType::Float16, DType::BFloat16}) {
    INFO(dt);
    const Tensor loss = scce(labels, make(logits, {2, 3}, dt));
    REQUIRE(loss.dtype() == DType::Float32);
    CHECK(scalar(loss) == Approx(reference).epsilon(1e-6));  // these logits are exact in every dtype
  }
  // Labels as int64, uint8 and float give the same loss.
  for (DType dt : {DType::Int64, DType::UInt8, DType::Float32})
    CHECK(scalar(scce(make({2, 0}, {2}, dt), f32(logits, {2, 3}))) == reference);
  const Tensor mse = losses::MeanSquaredError()(make({1, 2}, {2, 1}, DType::Float16), make({1.5, 2}, {2, 1}, DType::Float16));
  CHECK(mse.dtype() == DType::Float32);
  CHECK(scalar(mse) == Approx(0.125));
}

TEST_CASE("Loss gradients flow through the tape to y_pred (central differences)", "[losses][grad]") {
  // The losses compute in float32, so the float64 inputs of grad_check go through a cast: a coarser
  // step and tolerance than the op-level checks.
  testing::GradCheckOptions opt{.h = 1e-3, .rtol = 2e-2, .atol = 2e-3};
  const Tensor y_true = testing::rand64({3, 4}, 5, -1, 1);
  const Tensor probs = testing::rand64({3, 4}, 6, 0.1, 0.9);
  const Tensor logits = testing::rand64({3, 4}, 7, -2, 2);
  const Tensor labels = i32({1, 3, 0}, {3});
  const Tensor onehot = f32({0, 1, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0}, {3, 4});
  const Tensor bits = f32({1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 0, 1}, {3, 4});
  auto check = [&](const std::string& what, const losses::Loss& loss, const Tensor& t, const Tensor& p) {
    testing::check_gradients(what, [&](const std::vector<Tensor>& in) { return loss(t, in[0]); }, {p}, opt);
  };
  check("MeanSquaredError", losses::MeanSquaredError(), y_true, logits);
  check("Huber", losses::Huber({.delta = 0.7}), y_true, logits);
  check("LogCosh", losses::LogCosh(), y_true, logits);
  check("CosineSimilarity", losses::CosineSimilarity(), y_true, logits);
  check("BinaryCrossentropy", losses::BinaryCrossentropy(), bits, probs);
  check("BinaryCrossentropy(from_logits)", losses::BinaryCrossentropy({.from_logits = true}), bits, logits);
  check("CategoricalCrossentropy", losses::CategoricalCrossentropy(), onehot, probs);
  check("CategoricalCrossentropy(from_logits)", losses::CategoricalCrossentropy({.from_logits = true, .label_smoothing = 0.1}),
        onehot, logits);
  check("SparseCategoricalCrossentropy", losses::SparseCategoricalCrossentropy(), labels, probs);
  check("SparseCategoricalCrossentropy(from_logits)", losses::SparseCategoricalCrossentropy({.from_logits = true}),
        labels, logits);
  check("KLDivergence", losses::KLDivergence(), testing::rand64({3, 4}, 8, 0.1, 0.9), probs);
  check("MeanSquaredLogarithmicError", losses::MeanSquaredLogarithmicError(), testing::rand64({3, 4}, 9, 0, 3), probs);
  check("Poisson", losses::Poisson(), testing::rand64({3, 4}, 10, 0, 4), probs);
  // Away from the hinges' kinks at y_true * y_pred == 1: labels in {-1, 1}, predictions of magnitude >= 1.2.
  const Tensor hinge_pred = testing::rand64_away_from_zero({3, 4}, 11, 1.2, 2.5);
  check("SquaredHinge", losses::SquaredHinge(), bits, hinge_pred);
  check("CategoricalHinge", losses::CategoricalHinge(), onehot, logits);
}

TEST_CASE("BinaryCrossentropy from logits has TF's gradient at a logit of exactly 0", "[losses][grad]") {
  const Tensor x = f32({0, 0}, {2, 1});
  GradientTape tape;
  tape.watch(x);
  const Tensor loss = losses::BinaryCrossentropy({.from_logits = true})(f32({1, 0}, {2, 1}), x);
  const std::vector<float> g = tape.gradient(loss, {x})[0].to_vector<float>();
  // d/dx mean(bce) = (sigmoid(0) - z) / 2.
  CHECK(g[0] == Approx(-0.25));
  CHECK(g[1] == Approx(0.25));
  CHECK(scalar(loss) == Approx(std::log(2.0)));
}

TEST_CASE("SparseCategoricalCrossentropy ignore_class leaves ignored samples out, without NaN", "[losses]") {
  const Tensor logits = f32({1, 2, 3, 3, 2, 1, 0, 0, 5}, {3, 3});
  losses::SparseCategoricalCrossentropy all_ignored({.from_logits = true, .ignore_class = 1});
  GradientTape tape;
  tape.watch(logits);
  const Tensor loss = all_ignored(i32({1, 1, 1}, {3}), logits);
  const Tensor g = tape.gradient(loss, {logits})[0];
  CHECK(scalar(loss) == 0.0f);
  for (float v : g.to_vector<float>()) CHECK(v == 0.0f);  // divide_no_nan's gradient is 0, not NaN

  // One ignored sample out of three: the mean runs over the two others.
  losses::SparseCategoricalCrossentropy some({.from_logits = true, .ignore_class = 7});
  losses::SparseCategoricalCrossentropy plain({.from_logits = true, .reduction = "none"});
  const std::vector<float> each = plain(i32({0, 1, 2}, {3}), logits).to_vector<float>();
  CHECK(scalar(some(i32({0, 7, 2}, {3}), logits)) == Approx((each[0] + each[2]) / 2).epsilon(1e-6));
}

TEST_CASE("reduce_weighted_values follows Keras's reductions", "[losses]") {
  const Tensor v = f32({1, 2, 3, 4}, {4});
  const Tensor w = f32({1, 0, 2, 0.5}, {4});
  CHECK(scalar(losses::reduce_weighted_values(v, w, {}, "sum")) == 9.0f);
  CHECK(scalar(losses::reduce_weighted_values(v, w, {}, "sum_over_batch_size")) == 2.25f);
  CHECK(scalar(losses::reduce_weighted_values(v, w, {}, "mean_with_sample_weight")) == Approx(9.0 / 3.5));
  CHECK(losses::reduce_weighted_values(v, w, {}, "none").shape() == Shape{4});
  // A mask: the mean runs over the valid entries only.
  const Tensor mask = make({1, 1, 0, 1}, {4}, DType::Bool);
  CHECK(scalar(losses::reduce_weighted_values(v, {}, mask, "sum_over_batch_size")) == Approx(7.0 / 3));
  CHECK(scalar(losses::reduce_weighted_values(v, {}, mask, "sum")) == 7.0f);
  // (N, 1) weights against (N,) values: Keras expands the values.
  CHECK(losses::reduce_weighted_values(v, f32({1, 1, 1, 1}, {4, 1}), {}, "none").shape() == Shape{4, 1});
  CHECK_THROWS_WITH(losses::reduce_weighted_values(v, {}, {}, "avg", "MyLoss"), Contains("MyLoss"));
  // Empty batches reduce to 0 (Keras returns shape (0,) values unreduced).
  CHECK(losses::reduce_weighted_values(f32({}, {0}), {}, {}, "sum_over_batch_size").shape() == Shape{0});
  CHECK(scalar(losses::reduce_weighted_values(f32({}, {0, 2}), {}, {}, "sum_over_batch_size")) == 0.0f);
}
