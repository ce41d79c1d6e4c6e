// CategoricalGeneralizedCrossEntropy beyond the Keras golden values (those are in test_loss_fixtures.cpp):
// its name and config, q's range, label shapes, and gradients against float64 central differences.
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
Tensor i32(const std::vector<double>& v, const Shape& s) { return make(v, s, DType::Int32); }

}  // namespace

TEST_CASE("CategoricalGeneralizedCrossEntropy has Keras's name, default and q range", "[losses][gce]") {
  using losses::CategoricalGeneralizedCrossEntropy;
  CHECK(CategoricalGeneralizedCrossEntropy().get_config() ==
        nlohmann::json{{"name", "categorical_generalized_cross_entropy"}, {"reduction", "sum_over_batch_size"}, {"q", 0.5}});
  // Keras exports the class only: its losses.get knows no function name for it.
  CHECK(losses::get("CategoricalGeneralizedCrossEntropy")->name() == "categorical_generalized_cross_entropy");
  CHECK_THROWS_WITH(losses::get("categorical_generalized_cross_entropy"), Contains("Unknown loss"));
  for (double q : {0.0, 1.0, -0.5, 1.5})
    CHECK_THROWS_WITH(CategoricalGeneralizedCrossEntropy({.q = q}),
                      Contains("CategoricalGeneralizedCrossEntropy") && Contains("q must be in the interval (0, 1)"));
}

TEST_CASE("CategoricalGeneralizedCrossEntropy is (1 - p^q) / q of the true class's probability", "[losses][gce]") {
  const Tensor probs = f32({0.7, 0.2, 0.1, 0.25, 0.25, 0.5}, {2, 3});
  const losses::CategoricalGeneralizedCrossEntropy gce({.q = 0.4, .reduction = "none"});
  const std::vector<float> got = gce(i32({0, 2}, {2}), probs).to_vector<float>();
  REQUIRE(got.size() == 2);
  CHECK(got[0] == Approx((1 - std::pow(0.7, 0.4)) / 0.4));
  CHECK(got[1] == Approx((1 - std::pow(0.5, 0.4)) / 0.4));
  // [N, 1] labels, as Keras documents them, are the same labels (Keras itself would broadcast them into
  // an [N, N] loss).
  const std::vector<float> column = gce(i32({0, 2}, {2, 1}), probs).to_vector<float>();
  CHECK(column == got);
  // A label outside the classes has p = 0: 1 / q.
  CHECK(gce(i32({3, -1}, {2}), probs).to_vector<float>() == std::vector<float>{2.5f, 2.5f});
}

TEST_CASE("CategoricalGeneralizedCrossEntropy refuses labels that are not one index per prediction",
          "[losses][gce][errors]") {
  const Tensor probs = f32({0.7, 0.2, 0.1, 0.25, 0.25, 0.5}, {2, 3});
  const losses::CategoricalGeneralizedCrossEntropy gce;
  CHECK_THROWS_WITH(gce(f32({1, 0, 0, 0, 0, 1}, {2, 3}), probs),
                    Contains("CategoricalGeneralizedCrossEntropy") && Contains("(2, 3)") &&
                        Contains("one integer class index per prediction"));
  CHECK_THROWS_WITH(gce(i32({0, 1, 2}, {3}), probs), Contains("(3,)") && Contains("(2,)"));
  CHECK_THROWS_WITH(gce(make({1, 0}, {2}, DType::Bool), probs), Contains("bool"));
  CHECK_THROWS_WITH(gce(i32({0}, {}), f32({0.5}, {})), Contains("at least rank 1"));
  CHECK_THROWS_WITH(losses::deserialize({{"class_name", "CategoricalGeneralizedCrossEntropy"}, {"config", {{"q", 2}}}}),
                    Contains("q must be in the interval (0, 1), got 2"));
}

TEST_CASE("CategoricalGeneralizedCrossEntropy gradients match central differences", "[losses][gce][grad]") {
  testing::GradCheckOptions opt{.h = 1e-3, .rtol = 2e-2, .atol = 2e-3};
  const Tensor probs = testing::rand64({3, 4}, 51, 0.1, 0.9);
  const Tensor labels = i32({1, 3, 0}, {3});
  for (double q : {0.1, 0.5, 0.9}) {
    const losses::CategoricalGeneralizedCrossEntropy gce({.q = q});
    testing::check_gradients("CategoricalGeneralizedCrossEntropy(q " + std::to_string(q) + ")",
                             [&](const std::vector<Tensor>& in) { return gce(labels, in[0]); }, {probs}, opt);
  }
}
