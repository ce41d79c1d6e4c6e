#include <catch2/catch.hpp>

#include "framework/ember.h"
#include "tests/support/layer_testing.h"

using namespace ember;
using namespace ember::testing;

TEST_CASE("Flatten conformance", "[layers]") {
  run_layer_test({.what = "Flatten() on NHWC",
                  .make = [] { return std::make_shared<layers::Flatten>(); },
                  .input_shapes = {{2, 5, 5, 3}},
                  .check_bad_input_shape = false});
  run_layer_test({.what = "Flatten() on rank 2",
                  .make = [] { return std::make_shared<layers::Flatten>(); },
                  .input_shapes = {{3, 4}},
                  .check_bad_input_shape = false});
}

TEST_CASE("Flatten keeps channels_last order and Keras's shapes", "[layers]") {
  backend::clear_session();
  layers::Flatten f;
  CHECK(f.name() == "flatten");
  const Tensor x = make(iota(16), {2, 2, 2, 2}, DType::Float32);
  check_tensor(f(x), DType::Float32, {2, 8}, iota(16));
  CHECK(f(ops::zeros({0, 3, 2})).shape() == Shape{0, 6});  // an empty batch needs no inference
  CHECK(layers::Flatten()(ops::zeros({3})).shape() == Shape{3, 1});
  CHECK(f.compute_output_shape({-1, 5, 5, 3}) == Shape{-1, 75});
  CHECK(f.compute_output_shape({-1, -1, 5, 3}) == Shape{-1, -1});
  CHECK(f.get_config()["data_format"] == "channels_last");
  CHECK_THROWS_AS(layers::Flatten({.data_format = "channels_first"}), InvalidArgument);
  CHECK_THROWS_AS(layers::Flatten()(Tensor::scalar<float>(1.0f)), InvalidArgument);
  const auto j = nlohmann::json::parse(R"({"class_name": "Flatten", "config": {"name": "flat", "trainable": true,
    "dtype": "float32", "data_format": null}})");
  CHECK((*deserialize_layer(j))(x).shape() == Shape{2, 8});
}
