// BinaryFocalCrossentropy and CategoricalFocalCrossentropy beyond the Keras golden values (those are in
// test_loss_fixtures.cpp): options and configs, their reductions to the plain crossentropies, errors,
// and gradients against float64 central differences.
#include <catch2/catch.hpp>

#include <cmath>
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

std::vector<float> values(const Tensor& t) { return t.to_vector<float>(); }

}  // namespace

TEST_CASE("Focal losses have Keras's defaults and config keys", "[losses][focal]") {
  losses::BinaryFocalCrossentropy bfce;
  CHECK(bfce.name() == "binary_focal_crossentropy");
  CHECK(bfce.get_config() == nlohmann::json{{"name", "binary_focal_crossentropy"},
                                            {"reduction", "sum_over_batch_size"},
                                            {"from_logits", false},
                                            {"label_smoothing", 0.0},
                                            {"axis", -1},
                                            {"apply_class_balancing", false},
                                            {"alpha", 0.25},
                                            {"gamma", 2.0}});
  losses::CategoricalFocalCrossentropy cfce;
  CHECK(cfce.name() == "categorical_focal_crossentropy");
  CHECK(cfce.get_config() == nlohmann::json{{"name", "categorical_focal_crossentropy"},
                                            {"reduction", "sum_over_batch_size"},
                                            {"from_logits", false},
                                            {"label_smoothing", 0.0},
                                            {"axis", -1},
                                            {"alpha", 0.25},
                                            {"gamma", 2.0}});
  // A per-class alpha is a list in the config, even of one value, as Keras writes it.
  CHECK(losses::CategoricalFocalCrossentropy({.alpha = {0.5}}).get_config()["alpha"] == nlohmann::json::array({0.5}));
  CHECK(losses::CategoricalFocalCrossentropy({.alpha = {0.1, 0.9}}).get_config()["alpha"] ==
        nlohmann::json::array({0.1, 0.9}));
  const losses::LossPtr from_keras = losses::deserialize(
      {{"class_name", "CategoricalFocalCrossentropy"},
       {"config", {{"name", "f"}, {"reduction", nullptr}, {"alpha", {0.25, 0.75}}, {"gamma", 1}, {"dtype", "float32"}}}});
  CHECK(from_keras->reduction() == "none");
  CHECK(from_keras->get_config()["alpha"] == nlohmann::json::array({0.25, 0.75}));
  CHECK(from_keras->get_config()["gamma"] == 1.0);
}

TEST_CASE("Without focusing the focal losses are the plain crossentropies", "[losses][focal]") {
  const Tensor bits = f32({1, 0, 1, 1, 0, 0}, {2, 3});
  const Tensor probs = f32({0.9, 0.2, 0.6, 0.3, 0.45, 0.05}, {2, 3});
  const Tensor logits = f32({2.5, -1, 0.5, -3, 0, 1.25}, {2, 3});
  const Tensor onehot = f32({0, 0, 1, 0, 1, 0}, {2, 3});
  auto same = [](const Tensor& a, const Tensor& b) {
    const std::vector<float> x = values(a), y = values(b);
    REQUIRE(x.size() == y.size());
    for (size_t i = 0; i < x.size(); ++i) CHECK(x[i] == Approx(y[i]).epsilon(1e-6));
  };
  for (bool from_logits : {false, true}) {
    INFO("from_logits " << from_logits);
    const Tensor& x = from_logits ? logits : probs;
    same(losses::BinaryFocalCrossentropy({.gamma = 0, .from_logits = from_logits, .reduction = "none"})(bits, x),
         losses::BinaryCrossentropy({.from_logits = from_logits, .reduction = "none"})(bits, x));
    same(losses::CategoricalFocalCrossentropy({.alpha = 1, .gamma = 0, .from_logits = from_logits, .reduction = "none"})(
             onehot, x),
         losses::CategoricalCrossentropy({.from_logits = from_logits, .reduction = "none"})(onehot, x));
  }
  // Class balancing weighs class 1 by alpha and class 0 by 1 - alpha, per element.
  const Tensor one = f32({1}, {1, 1}), zero = f32({0}, {1, 1}), p = f32({0.3}, {1, 1});
  losses::BinaryFocalCrossentropy plain({.reduction = "none"});
  losses::BinaryFocalCrossentropy balanced({.apply_class_balancing = true, .alpha = 0.2, .reduction = "none"});
  CHECK(values(balanced(one, p))[0] == Approx(0.2 * values(plain(one, p))[0]).epsilon(1e-6));
  CHECK(values(balanced(zero, p))[0] == Approx(0.8 * values(plain(zero, p))[0]).epsilon(1e-6));
  // The focal factor (1 - p_t)^gamma down-weights the confident prediction: 0.1^2 of its crossentropy.
  CHECK(values(plain(one, f32({0.9}, {1, 1})))[0] == Approx(0.01 * -std::log(0.9)).epsilon(1e-5));
}

TEST_CASE("Focal loss arguments are checked as the crossentropies' are", "[losses][focal][errors]") {
  CHECK_THROWS_WITH(losses::BinaryFocalCrossentropy({.label_smoothing = -0.1}),
                    Contains("BinaryFocalCrossentropy") && Contains("label_smoothing must be in [0, 1]"));
  CHECK_THROWS_WITH(losses::CategoricalFocalCrossentropy({.label_smoothing = 2}),
                    Contains("CategoricalFocalCrossentropy") && Contains("label_smoothing"));
  CHECK_THROWS_WITH(losses::CategoricalFocalCrossentropy({.alpha = losses::FocalAlpha(std::vector<double>{})}),
                    Contains("CategoricalFocalCrossentropy") && Contains("alpha is an empty list"));
  const Tensor onehot = f32({0, 0, 1, 0, 1, 0}, {2, 3});
  const Tensor probs = f32({0.2, 0.2, 0.6, 0.3, 0.45, 0.25}, {2, 3});
  // Keras multiplies by the list, so a wrong length fails to broadcast against the classes.
  CHECK_THROWS_WITH(losses::CategoricalFocalCrossentropy({.alpha = {0.5, 0.5}})(onehot, probs),
                    Contains("CategoricalFocalCrossentropy") && Contains("alpha has 2 per-class weights") &&
                        Contains("(2, 3)"));
  CHECK_THROWS_WITH(losses::CategoricalFocalCrossentropy()(f32({0, 2}, {2}), probs),
                    Contains("CategoricalFocalCrossentropy") && Contains("(2,)") && Contains("(2, 3)"));
  CHECK_THROWS_WITH(losses::BinaryFocalCrossentropy()(f32({1, 0, 1, 0}, {2, 2}), probs),
                    Contains("BinaryFocalCrossentropy") && Contains("(2, 2)") && Contains("(2, 3)"));
  CHECK_THROWS_WITH(losses::BinaryFocalCrossentropy({.axis = 2})(onehot, probs),
                    Contains("BinaryFocalCrossentropy"));
  CHECK_THROWS_WITH(losses::CategoricalFocalCrossentropy({.axis = -3})(onehot, probs),
                    Contains("CategoricalFocalCrossentropy"));
  CHECK_THROWS_WITH(losses::deserialize({{"class_name", "CategoricalFocalCrossentropy"}, {"config", {{"alpha", "big"}}}}),
                    Contains("CategoricalFocalCrossentropy") && Contains("\"alpha\" must be a number or a list"));
  CHECK_THROWS_WITH(losses::deserialize({{"class_name", "BinaryFocalCrossentropy"}, {"config", {{"axis", true}}}}),
                    Contains("BinaryFocalCrossentropy") && Contains("\"axis\" must be an integer"));
  CHECK_THROWS_WITH(losses::deserialize({{"class_name", "BinaryFocalCrossentropy"}, {"config", {{"beta", 1}}}}),
                    Contains("unknown config key \"beta\""));
}

TEST_CASE("Focal loss gradients match central differences", "[losses][focal][grad]") {
  // The losses compute in float32, so the float64 inputs of grad_check go through a cast: a coarser step
  // and tolerance than the op-level checks (as the other losses' gradient test).
  testing::GradCheckOptions opt{.h = 1e-3, .rtol = 2e-2, .atol = 2e-3};
  const Tensor probs = testing::rand64({3, 4}, 21, 0.1, 0.9);
  const Tensor logits = testing::rand64({3, 4}, 22, -2, 2);
  const Tensor logits3 = testing::rand64({2, 3, 4}, 23, -2, 2);
  const Tensor bits = f32({1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 0, 1}, {3, 4});
  const Tensor soft = f32({0.9, 0.1, 0.5, 0.7, 0.2, 0, 1, 0.4, 0.6, 0.3, 0.8, 0.05}, {3, 4});
  const Tensor onehot = f32({0, 1, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0}, {3, 4});
  const Tensor onehot_axis1 = f32({1, 0, 0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 1}, {2, 3, 4});
  auto check = [&](const std::string& what, const losses::Loss& loss, const Tensor& t, const Tensor& p) {
    testing::check_gradients(what, [&](const std::vector<Tensor>& in) { return loss(t, in[0]); }, {p}, opt);
  };
  check("BinaryFocalCrossentropy", losses::BinaryFocalCrossentropy(), bits, probs);
  check("BinaryFocalCrossentropy(balanced, smoothing)",
        losses::BinaryFocalCrossentropy({.apply_class_balancing = true, .alpha = 0.7, .label_smoothing = 0.2}), soft,
        probs);
  check("BinaryFocalCrossentropy(from_logits, gamma 3)",
        losses::BinaryFocalCrossentropy({.gamma = 3, .from_logits = true}), bits, logits);
  check("BinaryFocalCrossentropy(from_logits, gamma 0.5, axis 0)",
        losses::BinaryFocalCrossentropy({.gamma = 0.5, .from_logits = true, .axis = 0}), soft, logits);
  check("CategoricalFocalCrossentropy", losses::CategoricalFocalCrossentropy(), onehot, probs);
  check("CategoricalFocalCrossentropy(from_logits, per-class alpha, smoothing)",
        losses::CategoricalFocalCrossentropy({.alpha = {0.1, 0.2, 0.3, 0.4}, .from_logits = true, .label_smoothing = 0.1}),
        onehot, logits);
  check("CategoricalFocalCrossentropy(from_logits, gamma 1.5, axis 1)",
        losses::CategoricalFocalCrossentropy({.gamma = 1.5, .from_logits = true, .axis = 1}), onehot_axis1, logits3);
}
