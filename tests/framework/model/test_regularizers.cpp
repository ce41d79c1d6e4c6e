// Regularizers: Keras's penalties (hand values; 0.35 for L1L2(0.01, 0.02) is also what Keras 3.15 prints
// for the x below), gradients through the tape, names and configs (Keras 3.15's serialize output).
#include <cmath>

#include "framework/model/regularizers.h"
#include "tests/support/grad_check.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using ember::testing::check_tensor;
using ember::testing::make;
using json = nlohmann::json;
namespace reg = ember::regularizers;

namespace {

// sum |x| = 6.5, sum x^2 = 14.25.
Tensor sample(DType dtype = DType::Float32) { return make({1, -2, 0.5, 3}, {2, 2}, dtype); }

}  // namespace

TEST_CASE("penalties follow Keras's formulas as float32 scalars", "[model][regularizers]") {
  check_tensor(reg::L1()(sample()), DType::Float32, {}, {0.065});
  check_tensor(reg::L2()(sample()), DType::Float32, {}, {0.1425});
  check_tensor(reg::L1L2(0.01, 0.02)(sample()), DType::Float32, {}, {0.35});  // keras.regularizers.L1L2(0.01, 0.02)
  check_tensor(reg::L1(0.5)(sample()), DType::Float32, {}, {3.25});
  check_tensor(reg::L2(2.0)(sample()), DType::Float32, {}, {28.5});
  check_tensor(reg::L1L2()(sample()), DType::Float32, {}, {0.0});
  check_tensor(reg::L1L2(0.0, 0.1)(sample()), DType::Float32, {}, {1.425});
  // Other float dtypes give a float32 penalty too (float64 summed in float64, halves in float32).
  for (DType dt : testing::kFloatDTypes) {
    INFO("dtype " << dt);
    check_tensor(reg::L1L2(0.01, 0.02)(sample(dt)), DType::Float32, {}, {0.35});
  }
  REQUIRE_THROWS_AS(reg::L2()(make({1, 2}, {2}, DType::Int32)), InvalidArgument);
}

TEST_CASE("the penalty is differentiable through the tape", "[model][regularizers][grad]") {
  // d/dx (l1 sum|x| + l2 sum x^2) = l1 sign(x) + 2 l2 x.
  const Tensor x = sample();
  GradientTape tape;
  tape.watch(x);
  Tensor penalty = reg::L1L2(0.01, 0.02)(x);
  std::vector<Tensor> g = tape.gradient(penalty, {x});
  REQUIRE(g[0].defined());
  check_tensor(g[0], DType::Float32, {2, 2}, {0.01 + 0.04, -0.01 - 0.08, 0.01 + 0.02, 0.01 + 0.12}, 1e-6, 1e-7);

  // A trainable variable read under the tape (as Layer::losses does): d/dw 0.5 sum w^2 = w.
  Variable w(sample(), {.name = "w"});
  GradientTape tape2;
  std::vector<Tensor> gw = tape2.gradient(reg::L2(0.5)(w), {w.value()});
  REQUIRE(gw[0].defined());
  check_tensor(gw[0], DType::Float32, {2, 2}, {1, -2, 0.5, 3}, 1e-6, 1e-7);

  // Against central differences (float64 weights away from the kink at 0; the penalty is float32).
  const Tensor x64 = testing::rand64_away_from_zero({3, 4}, 17);
  for (const Regularizer& r : {reg::L1(0.3), reg::L2(0.7), reg::L1L2(0.2, 0.4)}) {
    INFO(r.to_json().dump());
    testing::check_gradients("regularizer", [r](const std::vector<Tensor>& in) { return r(in[0]); }, {x64},
                             {.h = 1e-3, .rtol = 1e-3, .atol = 1e-4});
  }
}

TEST_CASE("names give Keras's regularizers and defaults", "[model][regularizers]") {
  CHECK(Regularizer("l1").to_json() == json{{"class_name", "L1"}, {"config", {{"l1", 0.01}}}});
  CHECK(Regularizer("L1").to_json() == json{{"class_name", "L1"}, {"config", {{"l1", 0.01}}}});
  CHECK(Regularizer("l2").to_json() == json{{"class_name", "L2"}, {"config", {{"l2", 0.01}}}});
  CHECK(Regularizer("L2").to_json() == json{{"class_name", "L2"}, {"config", {{"l2", 0.01}}}});
  // Keras 3's class and its registered snake name "l1l2" default to 0.0 (keras.regularizers.get("l1l2")).
  CHECK(Regularizer("L1L2").to_json() == json{{"class_name", "L1L2"}, {"config", {{"l1", 0.0}, {"l2", 0.0}}}});
  CHECK(Regularizer("l1l2").to_json() == json{{"class_name", "L1L2"}, {"config", {{"l1", 0.0}, {"l2", 0.0}}}});
  // "l1_l2" is tf.keras's l1_l2(l1=0.01, l2=0.01).
  CHECK(Regularizer("l1_l2").to_json() == json{{"class_name", "L1L2"}, {"config", {{"l1", 0.01}, {"l2", 0.01}}}});
  check_tensor(Regularizer("l1_l2")(sample()), DType::Float32, {}, {0.065 + 0.1425});

  REQUIRE_THROWS_AS(Regularizer("l3"), InvalidArgument);
  REQUIRE_THROWS_WITH(Regularizer("l3"), Catch::Contains("\"l3\"") && Catch::Contains("L1L2") &&
                                             Catch::Contains("l1") && Catch::Contains("l2"));
  REQUIRE_THROWS_WITH(reg::L1(-0.1), Catch::Contains("l1") && Catch::Contains("-0.1"));
  REQUIRE_THROWS_AS(reg::L1L2(0.0, std::nan("")), InvalidArgument);
}

TEST_CASE("an empty regularizer is null in JSON and cannot be called", "[model][regularizers]") {
  Regularizer none;
  CHECK_FALSE(static_cast<bool>(none));
  CHECK(static_cast<bool>(reg::L2()));
  CHECK(none.to_json().is_null());
  CHECK_FALSE(static_cast<bool>(Regularizer::from_json(nullptr)));
  REQUIRE_THROWS_AS(none(sample()), FailedPrecondition);
}

TEST_CASE("configs round-trip and Keras 3's serialized form loads", "[model][regularizers]") {
  for (const Regularizer& r : {reg::L1(0.25), reg::L2(1e-4), reg::L1L2(0.5, 0.125), reg::L1L2()}) {
    INFO(r.to_json().dump());
    Regularizer back = Regularizer::from_json(r.to_json());
    CHECK(back.to_json() == r.to_json());
    CHECK(back(sample()).item<float>() == r(sample()).item<float>());
  }
  // keras.regularizers.serialize(keras.regularizers.L2(0.001)) in Keras 3.15.
  Regularizer k = Regularizer::from_json(json::parse(
      R"({"module": "keras.regularizers", "class_name": "L2", "config": {"l2": 0.001}, "registered_name": null})"));
  CHECK(k.to_json() == json{{"class_name", "L2"}, {"config", {{"l2", 0.001}}}});
  check_tensor(k(sample()), DType::Float32, {}, {0.01425});
  // Keras's L1 stores its factor as float32, so it serializes 0.01 as 0.009999999776482582.
  CHECK(Regularizer::from_json(json::parse(R"({"class_name": "L1", "config": {"l1": 0.009999999776482582}})"))
            .to_json()["config"]["l1"] == 0.009999999776482582);
  CHECK(Regularizer::from_json(json("l2")).to_json() == Regularizer("l2").to_json());
  CHECK(Regularizer::from_json(json{{"class_name", "L1L2"}, {"config", {{"l2", 0.3}}}}).to_json() ==
        json{{"class_name", "L1L2"}, {"config", {{"l1", 0.0}, {"l2", 0.3}}}});

  REQUIRE_THROWS_WITH(Regularizer::from_json(json{{"class_name", "L2"}, {"config", {{"l1", 0.1}}}}),
                      Catch::Contains("l1"));
  REQUIRE_THROWS_AS(Regularizer::from_json(json{{"class_name", "OrthogonalRegularizer"}}), InvalidArgument);
  REQUIRE_THROWS_AS(Regularizer::from_json(json{{"class_name", "L2"}, {"config", {{"l2", "big"}}}}), InvalidArgument);
  REQUIRE_THROWS_AS(Regularizer::from_json(json(0.1)), InvalidArgument);
}
