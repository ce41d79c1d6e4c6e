#include <catch2/catch.hpp>

#include "framework/ember.h"
#include "tests/support/layer_testing.h"

using namespace ember;
using namespace ember::testing;

namespace {
// x[0, h, w, c] = 1..8 in NHWC order: channel 0 holds 1, 3, 5, 7 and channel 1 holds 2, 4, 6, 8.
Tensor input() { return make({1, 2, 3, 4, 5, 6, 7, 8}, {1, 2, 2, 2}, DType::Float32); }
}  // namespace

TEST_CASE("GlobalAveragePooling2D and GlobalMaxPooling2D conformance", "[layers]") {
  run_layer_test({.what = "GlobalAveragePooling2D()",
                  .make = [] { return std::make_shared<layers::GlobalAveragePooling2D>(); },
                  .input_shapes = {{2, 5, 5, 3}},
                  .check_bad_input_shape = false});
  run_layer_test({.what = "GlobalAveragePooling2D(keepdims)",
                  .make = [] { return std::make_shared<layers::GlobalAveragePooling2D>(layers::GlobalAveragePooling2DOptions{.keepdims = true}); },
                  .input_shapes = {{2, 5, 5, 3}},
                  .check_bad_input_shape = false});
  run_layer_test({.what = "GlobalMaxPooling2D()",
                  .make = [] { return std::make_shared<layers::GlobalMaxPooling2D>(); },
                  .input_shapes = {{2, 5, 5, 3}},
                  .check_bad_input_shape = false});
  run_layer_test({.what = "GlobalMaxPooling2D(keepdims)",
                  .make = [] { return std::make_shared<layers::GlobalMaxPooling2D>(layers::GlobalMaxPooling2DOptions{.keepdims = true}); },
                  .input_shapes = {{2, 5, 5, 3}},
                  .check_bad_input_shape = false});
}

TEST_CASE("Global pooling computes Keras's values, shapes and config", "[layers]") {
  backend::clear_session();
  layers::GlobalAveragePooling2D avg;
  CHECK(avg.name() == "global_average_pooling2d");
  check_tensor(avg(input()), DType::Float32, {1, 2}, {4, 5});
  check_tensor(layers::GlobalAveragePooling2D({.keepdims = true})(input()), DType::Float32, {1, 1, 1, 2}, {4, 5});
  layers::GlobalMaxPooling2D mx;
  CHECK(mx.name() == "global_max_pooling2d");
  check_tensor(mx(input()), DType::Float32, {1, 2}, {7, 8});
  check_tensor(layers::GlobalMaxPooling2D({.keepdims = true})(input()), DType::Float32, {1, 1, 1, 2}, {7, 8});
  CHECK(avg.compute_output_shape({-1, -1, -1, 16}) == Shape{-1, 16});
  CHECK(layers::GlobalMaxPooling2D({.keepdims = true}).compute_output_shape({-1, 7, 7, 16}) == Shape{-1, 1, 1, 16});
  CHECK(avg(ops::zeros({3, 9, 4, 2})).shape() == Shape{3, 2});  // any spatial size after building

  nlohmann::json c = layers::GlobalMaxPooling2D({.keepdims = true}).get_config();
  CHECK(c["keepdims"] == true);
  CHECK(c["data_format"] == "channels_last");
  const auto j = nlohmann::json::parse(R"({"module": "keras.layers", "class_name": "GlobalAveragePooling2D",
    "config": {"name": "gap", "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy", "config":
    {"name": "float32"}, "registered_name": null}, "data_format": "channels_last", "keepdims": true},
    "registered_name": null})");
  LayerPtr l = deserialize_layer(j);
  CHECK(l->name() == "gap");
  CHECK((*l)(input()).shape() == Shape{1, 1, 1, 2});
}

TEST_CASE("Global pooling rejects channels_first and non-image inputs", "[layers]") {
  CHECK_THROWS_AS(layers::GlobalAveragePooling2D({.data_format = "channels_first"}), InvalidArgument);
  CHECK_THROWS_AS(layers::GlobalMaxPooling2D({.data_format = "channels_first"}), InvalidArgument);
  layers::GlobalAveragePooling2D g({.name = "g"});
  try {
    g(ops::zeros({2, 3, 4}));
    FAIL("expected InvalidArgument");
  } catch (const InvalidArgument& e) {
    CHECK_THAT(e.what(), Catch::Contains("GlobalAveragePooling2D 'g'") && Catch::Contains("(2, 3, 4)"));
  }
  g(input());
  CHECK_THROWS_AS(g(ops::zeros({2, 3, 4})), InvalidArgument);
}
