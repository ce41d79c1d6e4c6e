// Dice and Tversky beyond the Keras golden values (those are in test_loss_fixtures.cpp): the axis option
// and its config forms, Tversky's relation to Dice, errors, and gradients against float64 central
// differences.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "framework/ember.h"
#include "tests/support/grad_check.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using Catch::Matchers::Contains;
using testing::make;

namespace {

Tensor f32(const std::vector<double>& v, const Shape& s) { return make(v, s, DType::Float32); }

}  // namespace

TEST_CASE("Dice and Tversky have Keras's defaults, and their axis keeps the form Keras writes", "[losses][dice]") {
  CHECK(losses::Dice().get_config() ==
        nlohmann::json{{"name", "dice"}, {"reduction", "sum_over_batch_size"}, {"axis", nullptr}});
  CHECK(losses::Tversky().get_config() == nlohmann::json{{"name", "tversky"},
                                                         {"reduction", "sum_over_batch_size"},
                                                         {"alpha", 0.5},
                                                         {"beta", 0.5},
                                                         {"axis", nullptr}});
  CHECK(losses::Dice({.axis = 1}).get_config()["axis"] == 1);
  CHECK(losses::Dice({.axis = {1}}).get_config()["axis"] == nlohmann::json::array({1}));
  CHECK(losses::Tversky({.axis = {1, 2, 3}}).get_config()["axis"] == nlohmann::json::array({1, 2, 3}));
  for (const nlohmann::json& axis : {nlohmann::json(nullptr), nlohmann::json(-1), nlohmann::json::array({0}),
                                     nlohmann::json::array({1, 2})}) {
    INFO(axis.dump());
    CHECK(losses::deserialize({{"class_name", "Dice"}, {"config", {{"axis", axis}}}})->get_config()["axis"] == axis);
  }
}

TEST_CASE("Dice and Tversky sum over every axis by default and over the given ones otherwise", "[losses][dice]") {
  const Tensor y_true = f32({1, 1, 0, 0, 1, 0}, {2, 3});
  const Tensor y_pred = f32({0.5, 1, 0.25, 0, 0.5, 0.5}, {2, 3});
  // All axes: 2 * 2 / (3 + 2.75) = 16 / 23.
  const Tensor all = losses::Dice({.reduction = "none"})(y_true, y_pred);
  CHECK(all.shape() == Shape{});
  CHECK(all.item<float>() == Approx(1 - 16.0 / 23.0));
  // Per row: 1 - 3 / (2 + 1.75) and 1 - 1 / (1 + 1).
  const std::vector<float> rows = losses::Dice({.reduction = "none", .axis = 1})(y_true, y_pred).to_vector<float>();
  REQUIRE(rows.size() == 2);
  CHECK(rows[0] == Approx(1 - 3 / 3.75));
  CHECK(rows[1] == Approx(0.5));
  // Tversky with alpha = beta = 0.5 is Dice; alpha weighs sum((1 - y_pred) * y_true), beta sum(y_pred * (1 - y_true)).
  CHECK(losses::Tversky()(y_true, y_pred).item<float>() == Approx(losses::Dice()(y_true, y_pred).item<float>()));
  // TP = 2, (1 - p) * t sums to 1, p * (1 - t) to 0.75.
  CHECK(losses::Tversky({.alpha = 1, .beta = 0})(y_true, y_pred).item<float>() == Approx(1 - 2.0 / 3.0));
  CHECK(losses::Tversky({.alpha = 0, .beta = 1})(y_true, y_pred).item<float>() == Approx(1 - 2.0 / 2.75));
}

TEST_CASE("Dice and Tversky refuse bad axes and mismatched shapes, naming the loss", "[losses][dice][errors]") {
  const Tensor y = f32({1, 1, 0, 0, 1, 0}, {2, 3});
  CHECK_THROWS_WITH(losses::Dice({.axis = 2})(y, y), Contains("Dice") && Contains("axis 2 is out of range") &&
                                                         Contains("rank 2"));
  CHECK_THROWS_WITH(losses::Tversky({.axis = {-3}})(y, y), Contains("Tversky") && Contains("axis -3"));
  CHECK_THROWS_WITH(losses::Dice({.axis = {1, -1}})(y, y), Contains("Dice") && Contains("axis -1") &&
                                                               Contains("each axis may appear once"));
  CHECK_THROWS_WITH(losses::Dice()(f32({1, 0}, {2}), y), Contains("Dice") && Contains("(2,)") && Contains("(2, 3)"));
  CHECK_THROWS_WITH(losses::Tversky()(f32({1, 0, 1, 0}, {2, 2}), y),
                    Contains("Tversky") && Contains("(2, 2)") && Contains("(2, 3)"));
  CHECK_THROWS_WITH(losses::deserialize({{"class_name", "Dice"}, {"config", {{"axis", "all"}}}}),
                    Contains("Dice") && Contains("\"axis\" must be null, an integer or a list of integers"));
  CHECK_THROWS_WITH(losses::deserialize({{"class_name", "Tversky"}, {"config", {{"axis", {1, 0.5}}}}}),
                    Contains("Tversky") && Contains("\"axis\""));
  CHECK_THROWS_WITH(losses::deserialize({{"class_name", "Dice"}, {"config", {{"alpha", 0.5}}}}),
                    Contains("unknown config key \"alpha\""));
}

TEST_CASE("Dice and Tversky gradients match central differences", "[losses][dice][grad]") {
  testing::GradCheckOptions opt{.h = 1e-3, .rtol = 2e-2, .atol = 2e-3};
  const Tensor probs = testing::rand64({3, 4}, 31, 0.05, 0.95);
  const Tensor probs4 = testing::rand64({2, 2, 3, 1}, 32, 0.05, 0.95);
  const Tensor mask = f32({1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 0, 1}, {3, 4});
  const Tensor soft = f32({0.9, 0.1, 0.5, 0.7, 0.2, 0, 1, 0.4, 0.6, 0.3, 0.8, 0.05}, {3, 4});
  const Tensor mask4 = f32({1, 0, 1, 1, 0, 0, 0, 1, 1, 0, 1, 1}, {2, 2, 3, 1});
  auto check = [&](const std::string& what, const losses::Loss& loss, const Tensor& t, const Tensor& p) {
    testing::check_gradients(what, [&](const std::vector<Tensor>& in) { return loss(t, in[0]); }, {p}, opt);
  };
  check("Dice", losses::Dice(), mask, probs);
  check("Dice(axis 1, reduction none)", losses::Dice({.reduction = "none", .axis = 1}), soft, probs);
  check("Dice(axis {1, 2, 3})", losses::Dice({.axis = {1, 2, 3}}), mask4, probs4);
  check("Tversky", losses::Tversky(), mask, probs);
  check("Tversky(alpha 0.7, beta 0.3, axis 0)", losses::Tversky({.alpha = 0.7, .beta = 0.3, .axis = 0}), soft, probs);
  check("Tversky(alpha 0.2, beta 0.9, axis {-3, -2})", losses::Tversky({.alpha = 0.2, .beta = 0.9, .axis = {-3, -2}}),
        mask4, probs4);
}
