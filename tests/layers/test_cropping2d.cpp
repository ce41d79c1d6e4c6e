#include <catch2/catch.hpp>

#include "framework/ember.h"
#include "tests/support/layer_testing.h"

using namespace ember;
using namespace ember::testing;

// No weights, and a built layer takes any height, width and channels (Keras's input spec is ndim=4).
TEST_CASE("Cropping2D conformance", "[layers]") {
  run_layer_test({.what = "Cropping2D(1)",
                  .make = [] { return std::make_shared<layers::Cropping2D>(1); },
                  .input_shapes = {{2, 5, 5, 3}},
                  .check_bad_input_shape = false});
  run_layer_test({.what = "Cropping2D(((1, 0), (2, 1)))",
                  .make = [] { return std::make_shared<layers::Cropping2D>(layers::Padding2D({1, 0}, {2, 1})); },
                  .input_shapes = {{2, 4, 5, 2}},
                  .check_bad_input_shape = false});
}

TEST_CASE("Cropping2D computes Keras's values and config", "[layers]") {
  backend::clear_session();
  const Tensor x = make(iota(12), {1, 3, 4, 1}, DType::Float32);
  layers::Cropping2D c(layers::Padding2D({1, 0}, {1, 2}));
  CHECK(c.name() == "cropping2d");
  check_tensor(c(x), DType::Float32, {1, 2, 1, 1}, {5, 9});
  check_tensor(layers::Cropping2D(layers::Padding2D(0, 1))(x), DType::Float32, {1, 3, 2, 1}, {1, 2, 5, 6, 9, 10});
  check_tensor(layers::Cropping2D()(x), DType::Float32, {1, 3, 4, 1}, iota(12));
  CHECK(c.get_config()["cropping"] == nlohmann::json({{1, 0}, {1, 2}}));
  CHECK(c.get_config()["data_format"] == "channels_last");
  CHECK(layers::Cropping2D(1).get_config()["cropping"] == nlohmann::json({{1, 1}, {1, 1}}));
  CHECK(c.compute_output_shape({-1, 7, -1, 3}) == Shape{-1, 6, -1, 3});
}

TEST_CASE("Cropping2D loads Keras 3 configs and rejects bad arguments", "[layers]") {
  const auto j = nlohmann::json::parse(R"({"module": "keras.layers", "class_name": "Cropping2D", "config": {
    "name": "cropping2d", "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy", "config":
    {"name": "float32"}, "registered_name": null}, "cropping": [[1, 0], [2, 1]], "data_format": "channels_last"},
    "registered_name": null})");
  LayerPtr l = deserialize_layer(j);
  auto* c = dynamic_cast<layers::Cropping2D*>(l.get());
  REQUIRE(c != nullptr);
  CHECK(c->cropping() == layers::Padding2D({1, 0}, {2, 1}));
  CHECK((*l)(ops::zeros({2, 5, 5, 3})).shape() == Shape{2, 4, 2, 3});
  nlohmann::json bad = j;
  bad["config"]["cropping"] = {1, 2, 3};
  CHECK_THROWS_AS(deserialize_layer(bad), InvalidArgument);

  CHECK_THROWS_AS(layers::Cropping2D(-1), InvalidArgument);
  CHECK_THROWS_AS(layers::Cropping2D(1, {.data_format = "channels_first"}), InvalidArgument);
  layers::Cropping2D crop(layers::Padding2D({1, 1}, {0, 0}), {.name = "crop"});
  for (const Shape& s : {Shape{1, 2, 4, 1}, Shape{1, 4, 4}}) {
    try {
      crop(ops::zeros(s));
      FAIL("expected InvalidArgument");
    } catch (const InvalidArgument& e) {
      CHECK_THAT(e.what(), Catch::Contains("Cropping2D 'crop'") && Catch::Contains(s.to_string()));
    }
  }
}
