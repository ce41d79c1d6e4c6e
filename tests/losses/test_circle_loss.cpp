// Circle beyond the Keras golden values (those are in test_loss_fixtures.cpp): its config, the mask that
// leaves samples without a positive pair out of the mean, errors, and gradients against float64 central
// differences.
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

// Four unit embeddings in the plane at angles 0, 0.9, 0.4 and 2.2 radians.
Tensor plane_embeddings() {
  std::vector<double> v;
  for (double a : {0.0, 0.9, 0.4, 2.2}) {
    v.push_back(std::cos(a));
    v.push_back(std::sin(a));
  }
  return f32(v, {4, 2});
}

}  // namespace

TEST_CASE("Circle has Keras's defaults and config keys", "[losses][circle]") {
  CHECK(losses::Circle().get_config() == nlohmann::json{{"name", "circle"},
                                                        {"reduction", "sum_over_batch_size"},
                                                        {"gamma", 80.0},
                                                        {"margin", 0.4},
                                                        {"remove_diagonal", true}});
  CHECK(losses::get("circle")->name() == "circle");
}

TEST_CASE("Circle leaves samples without a positive pair out of the mean", "[losses][circle]") {
  const Tensor emb = plane_embeddings();
  const Tensor labels = i32({0, 0, 1, 2}, {4});  // samples 2 and 3 have no positive pair
  const std::vector<float> each = losses::Circle({.reduction = "none"})(labels, emb).to_vector<float>();
  REQUIRE(each.size() == 4);
  CHECK(each[0] > 1);
  CHECK(each[1] > 1);
  CHECK(each[2] == 0.0f);
  CHECK(each[3] == 0.0f);
  // The mean runs over the two valid samples, the sum over all.
  CHECK(losses::Circle()(labels, emb).item<float>() == Approx((each[0] + each[1]) / 2));
  CHECK(losses::Circle({.reduction = "sum"})(labels, emb).item<float>() == Approx(each[0] + each[1]));
  // By hand for sample 0: its positive is at distance d = 1 - cos(0.9), its negatives at 1 - cos(0.4) and
  // 1 - cos(2.2); gamma 80, margin 0.4 (about 53.72).
  const double d = 1 - std::cos(0.9);
  const double p_loss = -80 * (0.4 + d) * (0.4 - d);
  double n_sum = 0;
  for (double a : {0.4, 2.2}) {
    const double dn = 1 - std::cos(a);
    n_sum += std::exp(80 * std::max(1.4 - dn, 0.0) * (0.6 - dn));
  }
  CHECK(each[0] == Approx(std::log1p(std::exp(p_loss + std::log(n_sum)))).epsilon(1e-5));
  CHECK(each[0] == Approx(53.7226).epsilon(1e-5));
  // Keeping the diagonal gives every sample a positive pair (itself).
  for (float v : losses::Circle({.remove_diagonal = false, .reduction = "none"})(labels, emb).to_vector<float>())
    CHECK(v > 0);
}

TEST_CASE("Circle refuses inputs that are not a batch of embeddings with one label each", "[losses][circle][errors]") {
  const Tensor emb = plane_embeddings();
  CHECK_THROWS_WITH(losses::Circle()(i32({0, 0, 1}, {3}), emb),
                    Contains("Circle") && Contains("one integer label per embedding") && Contains("(3,)"));
  CHECK_THROWS_WITH(losses::Circle()(i32({0, 0, 1, 1, 0, 0, 1, 1}, {4, 2}), emb), Contains("(4, 2)"));
  CHECK_THROWS_WITH(losses::Circle()(i32({0, 1}, {2}), f32({1, 0, 0, 1}, {2, 2, 1})),
                    Contains("Circle") && Contains("shape (N, D)"));
  CHECK_THROWS_WITH(losses::Circle()(make({1, 0, 1, 0}, {4}, DType::Bool), emb), Contains("bool"));
  CHECK_THROWS_WITH(losses::deserialize({{"class_name", "Circle"}, {"config", {{"remove_diagonal", 1}}}}),
                    Contains("Circle") && Contains("\"remove_diagonal\" must be true or false"));
}

TEST_CASE("Circle gradients match central differences", "[losses][circle][grad]") {
  // gamma scales the exponents, so a smaller one keeps float32 central differences meaningful.
  testing::GradCheckOptions opt{.h = 1e-3, .rtol = 2e-2, .atol = 2e-3};
  const Tensor emb = testing::rand64({6, 3}, 41, -1, 1);
  const Tensor labels = i32({0, 1, 0, 2, 1, 3}, {6});  // 2 and 3 unpaired: masked, with zero gradient
  auto check = [&](const std::string& what, const losses::Loss& loss) {
    testing::check_gradients(what, [&](const std::vector<Tensor>& in) { return loss(labels, in[0]); }, {emb}, opt);
  };
  check("Circle(gamma 4)", losses::Circle({.gamma = 4}));
  check("Circle(gamma 2, margin 0.25, diagonal kept)", losses::Circle({.gamma = 2, .margin = 0.25, .remove_diagonal = false}));
}
