#include <catch2/catch.hpp>

#include "framework/ember.h"
#include "tests/support/layer_testing.h"

using namespace ember;
using namespace ember::testing;

TEST_CASE("ZeroPadding2D conformance", "[layers]") {
  run_layer_test({.what = "ZeroPadding2D()",
                  .make = [] { return std::make_shared<layers::ZeroPadding2D>(); },
                  .input_shapes = {{2, 5, 5, 3}},
                  .check_bad_input_shape = false});
  run_layer_test({.what = "ZeroPadding2D(((1, 0), (2, 3)))",
                  .make = [] { return std::make_shared<layers::ZeroPadding2D>(layers::Padding2D{{1, 0}, {2, 3}}); },
                  .input_shapes = {{2, 4, 3, 2}},
                  .check_bad_input_shape = false});
}

TEST_CASE("ZeroPadding2D pads like Keras and keeps its config", "[layers]") {
  backend::clear_session();
  const Tensor five = make({5}, {1, 1, 1, 1}, DType::Float32);
  layers::ZeroPadding2D z(layers::Padding2D{{1, 0}, {0, 2}});
  CHECK(z.name() == "zero_padding2d");
  check_tensor(z(five), DType::Float32, {1, 2, 3, 1}, {0, 0, 0, 5, 0, 0});
  check_tensor(layers::ZeroPadding2D()(five), DType::Float32, {1, 3, 3, 1}, {0, 0, 0, 0, 5, 0, 0, 0, 0});
  CHECK(layers::ZeroPadding2D({1, 2})(ops::zeros({2, 3, 4, 5})).shape() == Shape{2, 5, 8, 5});
  CHECK(z.compute_output_shape({-1, -1, 4, 3}) == Shape{-1, -1, 6, 3});
  CHECK(z.get_config()["padding"] == nlohmann::json({{1, 0}, {0, 2}}));
  CHECK(layers::ZeroPadding2D(3).get_config()["padding"] == nlohmann::json({{3, 3}, {3, 3}}));

  // Keras 3 writes [[top, bottom], [left, right]]; hand-written configs may use an int or [h, w].
  const auto j = nlohmann::json::parse(R"({"class_name": "ZeroPadding2D", "config": {"name": "zp", "trainable": true,
    "dtype": "float32", "padding": [[1, 2], [3, 4]], "data_format": "channels_last"}})");
  LayerPtr l = deserialize_layer(j);
  CHECK((*l)(ops::zeros({1, 1, 1, 1})).shape() == Shape{1, 4, 8, 1});
  nlohmann::json pair = j;
  pair["config"]["padding"] = {2, 1};
  CHECK(deserialize_layer(pair)->get_config()["padding"] == nlohmann::json({{2, 2}, {1, 1}}));
  nlohmann::json bad = j;
  bad["config"]["padding"] = {1, 2, 3};
  CHECK_THROWS_AS(deserialize_layer(bad), InvalidArgument);
}

TEST_CASE("ZeroPadding2D rejects bad arguments and inputs", "[layers]") {
  CHECK_THROWS_AS(layers::ZeroPadding2D(-1), InvalidArgument);
  CHECK_THROWS_AS(layers::ZeroPadding2D(1, {.data_format = "channels_first"}), InvalidArgument);
  layers::ZeroPadding2D z(1, {.name = "zp"});
  try {
    z(ops::zeros({2, 3}));
    FAIL("expected InvalidArgument");
  } catch (const InvalidArgument& e) {
    CHECK_THAT(e.what(), Catch::Contains("ZeroPadding2D 'zp'") && Catch::Contains("(2, 3)"));
  }
}
