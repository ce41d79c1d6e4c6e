#include <catch2/catch.hpp>

#include "framework/ember.h"
#include "tests/support/layer_testing.h"

using namespace ember;
using namespace ember::testing;

namespace {
Tensor f32(const std::vector<double>& v, const Shape& s) { return make(v, s, DType::Float32); }
}  // namespace

TEST_CASE("DepthwiseConv2D conformance", "[layers]") {
  run_layer_test({.what = "DepthwiseConv2D(3)",
                  .make = [] { return std::make_shared<layers::DepthwiseConv2D>(3); },
                  .input_shapes = {{2, 5, 5, 3}},
                  .trainable_weights = 2,
                  .weight_shapes = {{3, 3, 3, 1}, {3}}});
  run_layer_test({.what = "DepthwiseConv2D((2, 3), strides 2, same, multiplier 2, tanh)",
                  .make = [] {
                    return std::make_shared<layers::DepthwiseConv2D>(
                        layers::Size2{2, 3}, layers::DepthwiseConv2DOptions{
                                                 .strides = 2, .padding = "same", .depth_multiplier = 2, .activation = "tanh"});
                  },
                  .input_shapes = {{2, 5, 5, 3}},
                  .trainable_weights = 2,
                  .weight_shapes = {{2, 3, 3, 2}, {6}}});
  run_layer_test({.what = "DepthwiseConv2D(2, dilation 2, no bias)",
                  .make = [] {
                    return std::make_shared<layers::DepthwiseConv2D>(
                        2, layers::DepthwiseConv2DOptions{.dilation_rate = 2, .use_bias = false});
                  },
                  .input_shapes = {{2, 5, 5, 2}},
                  .trainable_weights = 1,
                  .weight_shapes = {{2, 2, 2, 1}}});
}

TEST_CASE("DepthwiseConv2D computes Keras's values, names and config", "[layers]") {
  backend::clear_session();
  // Keras 3 names the kernel "kernel" (kh, kw, in, multiplier); output channel c * multiplier + m.
  layers::DepthwiseConv2D d(1, {.depth_multiplier = 2});
  const Tensor p = f32({1, 2}, {1, 1, 1, 2});
  d(p);
  REQUIRE(d.weights().size() == 2);
  CHECK(d.weights()[0].name() == "depthwise_conv2d/kernel");
  CHECK(d.weights()[1].name() == "depthwise_conv2d/bias");
  CHECK(d.kernel().shape() == Shape{1, 1, 2, 2});
  CHECK(d.bias().shape() == Shape{4});
  d.set_weights({f32({1, 2, 3, 4}, {1, 1, 2, 2}), f32({0, 0, 0, 0.5}, {4})});
  check_tensor(d(p), DType::Float32, {1, 1, 1, 4}, {1, 2, 6, 8.5});

  // 2x2 valid window per channel: channel 0 sees 1, 3, 5, 7; channel 1 sees 2, 4, 6, 8.
  layers::DepthwiseConv2D spatial(2, {.activation = "relu", .use_bias = false});
  const Tensor x = f32({1, 2, 3, 4, 5, 6, 7, 8}, {1, 2, 2, 2});
  spatial(x);
  spatial.set_weights({f32({1, -1, 1, -1, 1, -1, 1, -1}, {2, 2, 2, 1})});
  check_tensor(spatial(x), DType::Float32, {1, 1, 1, 2}, {16, 0});

  nlohmann::json cfg = d.get_config();
  CHECK(cfg["kernel_size"] == nlohmann::json({1, 1}));
  CHECK(cfg["depth_multiplier"] == 2);
  CHECK(cfg["padding"] == "valid");
  CHECK(cfg["depthwise_initializer"]["class_name"] == "GlorotUniform");
  CHECK(cfg["depthwise_regularizer"].is_null());
  CHECK(cfg["depthwise_constraint"].is_null());
  CHECK(d.compute_output_shape({-1, 7, 7, 3}) == Shape{-1, 7, 7, 6});
  CHECK(layers::DepthwiseConv2D(3, {.strides = 2}).compute_output_shape({-1, 7, -1, 3}) == Shape{-1, 3, -1, 3});
}

TEST_CASE("DepthwiseConv2D rejects bad arguments and incompatible inputs", "[layers]") {
  CHECK_THROWS_AS(layers::DepthwiseConv2D(0), InvalidArgument);
  CHECK_THROWS_AS(layers::DepthwiseConv2D(3, {.depth_multiplier = 0}), InvalidArgument);
  CHECK_THROWS_AS(layers::DepthwiseConv2D(3, {.padding = "full"}), InvalidArgument);
  CHECK_THROWS_AS(layers::DepthwiseConv2D(3, {.data_format = "channels_first"}), InvalidArgument);
  CHECK_THROWS_AS(layers::DepthwiseConv2D(3, {.strides = 2, .dilation_rate = 2}), InvalidArgument);
  layers::DepthwiseConv2D d(3, {.name = "dw"});
  CHECK_THROWS_AS(d(ops::zeros({1, 2, 5, 3})), InvalidArgument);
  d(ops::zeros({1, 5, 5, 3}));
  try {
    d(ops::zeros({1, 5, 5, 4}));
    FAIL("expected InvalidArgument");
  } catch (const InvalidArgument& e) {
    CHECK_THAT(e.what(), Catch::Contains("DepthwiseConv2D 'dw'") && Catch::Contains("(1, 5, 5, 4)"));
  }
}

TEST_CASE("DepthwiseConv2D loads a config written by Keras 3", "[layers]") {
  // keras.saving.serialize_keras_object(keras.layers.DepthwiseConv2D(3, depth_multiplier=2)) from Keras 3.15.
  const auto j = nlohmann::json::parse(R"({"module": "keras.layers", "class_name": "DepthwiseConv2D", "config": {
    "name": "depthwise_conv2d", "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy",
    "config": {"name": "float32"}, "registered_name": null}, "depth_multiplier": 2, "kernel_size": [3, 3],
    "strides": [1, 1], "padding": "valid", "data_format": "channels_last", "dilation_rate": [1, 1],
    "activation": "linear", "use_bias": true, "depthwise_initializer": {"module": "keras.initializers",
    "class_name": "GlorotUniform", "config": {"seed": null, "input_axes": null, "output_axes": null},
    "registered_name": null}, "bias_initializer": {"module": "keras.initializers", "class_name": "Zeros",
    "config": {}, "registered_name": null}, "depthwise_regularizer": null, "bias_regularizer": null,
    "activity_regularizer": null, "depthwise_constraint": null, "bias_constraint": null}, "registered_name": null})");
  LayerPtr l = deserialize_layer(j);
  REQUIRE(dynamic_cast<layers::DepthwiseConv2D*>(l.get()) != nullptr);
  CHECK((*l)(ops::zeros({1, 5, 5, 2})).shape() == Shape{1, 3, 3, 4});
}
