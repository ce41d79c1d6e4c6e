#include <catch2/catch.hpp>

#include "framework/ember.h"
#include "tests/support/layer_testing.h"

using namespace ember;
using namespace ember::testing;

namespace {
Tensor f32(const std::vector<double>& v, const Shape& s) { return make(v, s, DType::Float32); }
Tensor nine() { return f32({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 3, 3, 1}); }
}  // namespace

// Pooling layers have no weights, and Keras lets a built one take other heights, widths and channels,
// so the harness's changed-channels check does not apply.
TEST_CASE("MaxPooling2D and AveragePooling2D conformance", "[layers]") {
  run_layer_test({.what = "MaxPooling2D()",
                  .make = [] { return std::make_shared<layers::MaxPooling2D>(); },
                  .input_shapes = {{2, 5, 5, 3}},
                  .check_bad_input_shape = false});
  run_layer_test({.what = "MaxPooling2D(3, strides 2, same)",
                  .make = [] { return std::make_shared<layers::MaxPooling2D>(3, layers::MaxPooling2DOptions{.strides = 2, .padding = "same"}); },
                  .input_shapes = {{2, 5, 5, 3}},
                  .check_bad_input_shape = false});
  run_layer_test({.what = "AveragePooling2D()",
                  .make = [] { return std::make_shared<layers::AveragePooling2D>(); },
                  .input_shapes = {{2, 5, 5, 3}},
                  .check_bad_input_shape = false});
  run_layer_test({.what = "AveragePooling2D((2, 3), strides 1, same)",
                  .make = [] {
                    return std::make_shared<layers::AveragePooling2D>(
                        layers::Size2{2, 3}, layers::AveragePooling2DOptions{.strides = 1, .padding = "same"});
                  },
                  .input_shapes = {{2, 5, 5, 3}},
                  .check_bad_input_shape = false});
}

TEST_CASE("MaxPooling2D computes Keras's values and config", "[layers]") {
  backend::clear_session();
  layers::MaxPooling2D m;
  CHECK(m.name() == "max_pooling2d");
  check_tensor(m(nine()), DType::Float32, {1, 1, 1, 1}, {5});
  check_tensor(layers::MaxPooling2D(2, {.padding = "same"})(nine()), DType::Float32, {1, 2, 2, 1}, {5, 6, 8, 9});
  check_tensor(layers::MaxPooling2D(2, {.strides = 1})(nine()), DType::Float32, {1, 2, 2, 1}, {5, 6, 8, 9});
  // A built pooling layer takes any height, width and channel count (Keras's input spec is ndim=4).
  CHECK(m(ops::zeros({2, 6, 4, 7})).shape() == Shape{2, 3, 2, 7});
  nlohmann::json c = layers::MaxPooling2D(3, {.strides = 1}).get_config();
  CHECK(c["pool_size"] == nlohmann::json({3, 3}));
  CHECK(c["strides"] == nlohmann::json({1, 1}));
  CHECK(c["padding"] == "valid");
  CHECK(c["data_format"] == "channels_last");
  CHECK(m.get_config()["strides"] == nlohmann::json({2, 2}));  // strides default to pool_size
  CHECK(m.compute_output_shape({-1, 28, -1, 8}) == Shape{-1, 14, -1, 8});
  CHECK(layers::MaxPooling2D(2, {.padding = "same"}).compute_output_shape({-1, 5, 5, 3}) == Shape{-1, 3, 3, 3});
}

TEST_CASE("AveragePooling2D computes Keras's values and config", "[layers]") {
  backend::clear_session();
  layers::AveragePooling2D a;
  CHECK(a.name() == "average_pooling2d");
  check_tensor(a(nine()), DType::Float32, {1, 1, 1, 1}, {3});
  // SAME windows at the edge average only their real pixels (TF).
  check_tensor(layers::AveragePooling2D(2, {.padding = "same"})(nine()), DType::Float32, {1, 2, 2, 1},
               {3, 4.5, 7.5, 9});
  check_tensor(layers::AveragePooling2D(2, {.strides = 1})(nine()), DType::Float32, {1, 2, 2, 1}, {3, 4, 6, 7});
  // TF gives an empty output when the input is smaller than a VALID window stride.
  CHECK(a(ops::zeros({1, 1, 1, 3})).shape() == Shape{1, 0, 0, 3});
}

TEST_CASE("Pooling layers load Keras 3 configs and reject bad arguments", "[layers]") {
  const auto j = nlohmann::json::parse(R"({"module": "keras.layers", "class_name": "MaxPooling2D", "config": {
    "name": "max_pooling2d", "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy", "config":
    {"name": "float32"}, "registered_name": null}, "pool_size": [3, 2], "padding": "same", "strides": [1, 2],
    "data_format": "channels_last"}, "registered_name": null})");
  LayerPtr l = deserialize_layer(j);
  auto* m = dynamic_cast<layers::MaxPooling2D*>(l.get());
  REQUIRE(m != nullptr);
  CHECK(m->pool_size() == layers::Size2(3, 2));
  CHECK(m->options().strides == layers::Size2(1, 2));
  nlohmann::json avg = j;
  avg["class_name"] = "AveragePooling2D";
  avg["config"]["strides"] = nullptr;  // tf.keras may write None: the pool size
  LayerPtr a = deserialize_layer(avg);
  CHECK(a->get_config()["strides"] == nlohmann::json({3, 2}));

  CHECK_THROWS_AS(layers::MaxPooling2D(0), InvalidArgument);
  CHECK_THROWS_AS(layers::MaxPooling2D(2, {.strides = -1}), InvalidArgument);
  CHECK_THROWS_AS(layers::AveragePooling2D(2, {.padding = "full"}), InvalidArgument);
  CHECK_THROWS_AS(layers::AveragePooling2D(2, {.data_format = "channels_first"}), InvalidArgument);
  try {
    layers::MaxPooling2D m2(2, {.name = "pool"});
    m2(ops::zeros({2, 4, 4}));
    FAIL("expected InvalidArgument");
  } catch (const InvalidArgument& e) {
    CHECK_THAT(e.what(), Catch::Contains("MaxPooling2D 'pool'") && Catch::Contains("rank-4"));
  }
  layers::MaxPooling2D built;
  built(ops::zeros({1, 4, 4, 1}));
  CHECK_THROWS_AS(built(ops::zeros({1, 4, 4})), InvalidArgument);
  CHECK_THROWS_AS(layers::MaxPooling2D(3, {.strides = 1})(ops::zeros({1, 1, 1, 1})), InvalidArgument);  // negative size
}
