#include <catch2/catch.hpp>

#include "framework/ember.h"
#include "tests/support/layer_testing.h"

using namespace ember;
using namespace ember::testing;

TEST_CASE("Reshape conformance", "[layers]") {
  // A built Reshape takes any per-sample shape of the right size (Keras has no input spec), so the harness's
  // changed-shape check is replaced by the error tests below.
  run_layer_test({.what = "Reshape((15, 5))",
                  .make = [] { return std::make_shared<layers::Reshape>(Shape{15, 5}); },
                  .input_shapes = {{2, 5, 5, 3}},
                  .check_bad_input_shape = false});
  run_layer_test({.what = "Reshape((-1, 3, 1))",
                  .make = [] { return std::make_shared<layers::Reshape>(Shape{-1, 3, 1}); },
                  .input_shapes = {{2, 5, 5, 3}},
                  .check_bad_input_shape = false});
}

TEST_CASE("Reshape infers -1 and keeps row-major order", "[layers]") {
  backend::clear_session();
  layers::Reshape r({4, -1});
  CHECK(r.name() == "reshape");
  const Tensor x = make(iota(16), {2, 2, 2, 2}, DType::Float32);
  check_tensor(r(x), DType::Float32, {2, 4, 2}, iota(16));
  CHECK(r.compute_output_shape({-1, 2, 2, 2}) == Shape{-1, 4, 2});
  CHECK(r.compute_output_shape({-1, -1, 2, 2}) == Shape{-1, 4, -1});  // as Keras: unknown stays unknown
  CHECK(r(ops::zeros({0, 8})).shape() == Shape{0, 4, 2});
  CHECK(r(ops::zeros({3, 4, 3})).shape() == Shape{3, 4, 3});  // a built Reshape takes any compatible shape
  CHECK(layers::Reshape({})(ops::zeros({5, 1, 1})).shape() == Shape{5});
  CHECK(r.get_config()["target_shape"] == nlohmann::json({4, -1}));
  const auto j = nlohmann::json::parse(R"({"module": "keras.layers", "class_name": "Reshape", "config": {"name":
    "reshape_7", "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name":
    "float32"}, "registered_name": null}, "target_shape": [2, -1]}, "registered_name": null})");
  LayerPtr l = deserialize_layer(j);
  CHECK(l->name() == "reshape_7");
  CHECK((*l)(x).shape() == Shape{2, 2, 4});
}

TEST_CASE("Reshape rejects bad target shapes and sizes that do not match", "[layers]") {
  CHECK_THROWS_AS(layers::Reshape({-1, -1}), InvalidArgument);
  CHECK_THROWS_AS(layers::Reshape({0, 3}), InvalidArgument);
  CHECK_THROWS_AS(layers::Reshape({-2, 3}), InvalidArgument);
  layers::Reshape r({4, 4}, {.name = "rs"});
  try {
    r(ops::zeros({1, 5, 5, 3}));
    FAIL("expected InvalidArgument");
  } catch (const InvalidArgument& e) {
    CHECK_THAT(e.what(), Catch::Contains("Reshape 'rs'") && Catch::Contains("(1, 5, 5, 3)") &&
                             Catch::Contains("(4, 4)"));
  }
  CHECK_THROWS_AS(layers::Reshape({4, -1})(ops::zeros({1, 5, 5, 3})), InvalidArgument);  // 75 is not a multiple of 4
  CHECK_THROWS_AS(layers::Reshape({4, 4}).compute_output_shape({-1, 5, 5, 3}), InvalidArgument);
  layers::Reshape built({-1});
  built(ops::zeros({2, 3}));
  CHECK_THROWS_AS(built(Tensor::scalar<float>(1.0f)), InvalidArgument);
}
