#include <catch2/catch.hpp>

#include "framework/ember.h"
#include "tests/support/layer_testing.h"

using namespace ember;
using namespace ember::testing;

namespace {
Tensor f32(const std::vector<double>& v, const Shape& s) { return make(v, s, DType::Float32); }
}  // namespace

TEST_CASE("Conv3D conformance", "[layers]") {
  run_layer_test({.what = "Conv3D(3, 2)",
                  .make = [] { return std::make_shared<layers::Conv3D>(3, 2); },
                  .input_shapes = {{2, 3, 4, 4, 2}},
                  .trainable_weights = 2,
                  .weight_shapes = {{2, 2, 2, 2, 3}, {3}}});
  run_layer_test({.what = "Conv3D(2, (3, 2, 2), strides 2, same, tanh)",
                  .make = [] {
                    return std::make_shared<layers::Conv3D>(
                        2, layers::Size3{3, 2, 2},
                        layers::Conv3DOptions{.strides = 2, .padding = "same", .activation = "tanh"});
                  },
                  .input_shapes = {{2, 4, 3, 5, 2}},
                  .trainable_weights = 2,
                  .weight_shapes = {{3, 2, 2, 2, 2}, {2}}});
  run_layer_test({.what = "Conv3D(4, 2, dilation (2, 1, 1), groups 2, no bias)",
                  .make = [] {
                    return std::make_shared<layers::Conv3D>(
                        4, 2, layers::Conv3DOptions{.dilation_rate = layers::Size3{2, 1, 1}, .groups = 2, .use_bias = false});
                  },
                  .input_shapes = {{2, 4, 3, 3, 4}},
                  .trainable_weights = 1,
                  .weight_shapes = {{2, 2, 2, 2, 4}}});
}

TEST_CASE("Conv3D computes Keras's values, names and config", "[layers]") {
  backend::clear_session();
  // Depth taps [1, 10] over depths [1, 2, 3] (1x1 spatial): valid gives 1 + 20 and 2 + 30.
  layers::Conv3D c(1, {2, 1, 1});
  const Tensor x = f32({1, 2, 3}, {1, 3, 1, 1, 1});
  c(x);
  REQUIRE(c.weights().size() == 2);
  CHECK(c.weights()[0].name() == "conv3d/kernel");
  CHECK(c.weights()[1].name() == "conv3d/bias");
  c.set_weights({f32({1, 10}, {2, 1, 1, 1, 1}), f32({0.5}, {1})});
  check_tensor(c(x), DType::Float32, {1, 2, 1, 1, 1}, {21.5, 32.5});
  // "same" pads TF's odd depth step after; strides 2 then read depths 0 and 2.
  layers::Conv3D same(1, {2, 1, 1}, {.padding = "same", .use_bias = false});
  same(x);
  same.set_weights({f32({1, 10}, {2, 1, 1, 1, 1})});
  check_tensor(same(x), DType::Float32, {1, 3, 1, 1, 1}, {21, 32, 3});
  layers::Conv3D strided(1, {2, 1, 1}, {.strides = {2, 1, 1}, .padding = "same", .use_bias = false});
  strided(x);
  strided.set_weights({f32({1, 10}, {2, 1, 1, 1, 1})});
  check_tensor(strided(x), DType::Float32, {1, 2, 1, 1, 1}, {21, 3});
  // Height and width as Conv2D: a 1x2x2 kernel over one 2x2 plane.
  layers::Conv3D plane(1, {1, 2, 2}, {.use_bias = false});
  const Tensor p = f32({1, 2, 3, 4}, {1, 1, 2, 2, 1});
  plane(p);
  plane.set_weights({f32({1, 10, 100, 1000}, {1, 2, 2, 1, 1})});
  check_tensor(plane(p), DType::Float32, {1, 1, 1, 1, 1}, {4321});

  nlohmann::json cfg = strided.get_config();
  CHECK(cfg["kernel_size"] == nlohmann::json({2, 1, 1}));
  CHECK(cfg["strides"] == nlohmann::json({2, 1, 1}));
  CHECK(cfg["dilation_rate"] == nlohmann::json({1, 1, 1}));
  CHECK(cfg["padding"] == "same");
  CHECK(cfg["groups"] == 1);
  CHECK(cfg["kernel_constraint"].is_null());
  CHECK(layers::Conv3D(4, 3).compute_output_shape({-1, 5, -1, 7, 2}) == Shape{-1, 3, -1, 5, 4});
  CHECK(layers::Conv3D(4, 3, {.strides = 2, .padding = "same"}).compute_output_shape({-1, 5, 6, 7, 2}) ==
        Shape{-1, 3, 3, 4, 4});
}

TEST_CASE("Conv3D rejects bad arguments and incompatible inputs", "[layers]") {
  CHECK_THROWS_AS(layers::Conv3D(0, 3), InvalidArgument);
  CHECK_THROWS_AS(layers::Conv3D(2, {3, 0, 3}), InvalidArgument);
  CHECK_THROWS_AS(layers::Conv3D(3, 3, {.groups = 2}), InvalidArgument);
  CHECK_THROWS_AS(layers::Conv3D(2, 3, {.padding = "causal"}), InvalidArgument);
  CHECK_THROWS_AS(layers::Conv3D(2, 3, {.data_format = "channels_first"}), InvalidArgument);
  CHECK_THROWS_AS(layers::Conv3D(2, 3, {.strides = 2, .dilation_rate = 2}), InvalidArgument);
  layers::Conv3D c(2, 3, {.name = "c3"});
  // Wrong rank; kernel deeper than the input (found while building: the shape named has an unknown batch).
  for (const Shape& bad : {Shape{1, 5, 5, 3}, Shape{1, 2, 5, 5, 3}}) {
    try {
      c(ops::zeros(bad));
      FAIL("expected InvalidArgument");
    } catch (const InvalidArgument& e) {
      Shape named = bad;
      named[0] = -1;
      CHECK_THAT(e.what(), Catch::Contains("Conv3D 'c3'") && Catch::Contains(named.to_string()));
    }
  }
  CHECK_FALSE(c.built());
  c(ops::zeros({1, 3, 4, 5, 3}));
  try {
    c(ops::zeros({1, 3, 4, 5, 2}));
    FAIL("expected InvalidArgument");
  } catch (const InvalidArgument& e) {
    CHECK_THAT(e.what(), Catch::Contains("Conv3D 'c3'") && Catch::Contains("(1, 3, 4, 5, 2)") &&
                             Catch::Contains("(batch, depth, height, width, 3)"));
  }
}

TEST_CASE("Conv3D loads a config written by Keras 3", "[layers]") {
  // keras.saving.serialize_keras_object(keras.layers.Conv3D(4, 3, strides=(1, 2, 2), padding="same")), Keras 3.15.
  const auto j = nlohmann::json::parse(R"({"module": "keras.layers", "class_name": "Conv3D", "config": {
    "name": "conv3d", "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy", "config":
    {"name": "float32"}, "registered_name": null}, "filters": 4, "kernel_size": [3, 3, 3], "strides": [1, 2, 2],
    "padding": "same", "data_format": "channels_last", "dilation_rate": [1, 1, 1], "groups": 1, "activation":
    "linear", "use_bias": true, "kernel_initializer": {"module": "keras.initializers", "class_name":
    "GlorotUniform", "config": {"seed": null, "input_axes": null, "output_axes": null}, "registered_name": null},
    "bias_initializer": {"module": "keras.initializers", "class_name": "Zeros", "config": {}, "registered_name":
    null}, "kernel_regularizer": null, "bias_regularizer": null, "activity_regularizer": null, "kernel_constraint":
    null, "bias_constraint": null}, "registered_name": null})");
  LayerPtr l = deserialize_layer(j);
  auto* c = dynamic_cast<layers::Conv3D*>(l.get());
  REQUIRE(c != nullptr);
  CHECK(c->options().strides == layers::Size3(1, 2, 2));
  CHECK((*l)(ops::zeros({1, 3, 5, 5, 2})).shape() == Shape{1, 3, 3, 3, 4});
  nlohmann::json bad = j;
  bad["config"]["kernel_size"] = {3, 3};
  CHECK_THROWS_AS(deserialize_layer(bad), InvalidArgument);
}
