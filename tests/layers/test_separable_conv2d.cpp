#include <catch2/catch.hpp>

#include "framework/ember.h"
#include "tests/support/layer_testing.h"

using namespace ember;
using namespace ember::testing;

namespace {
Tensor f32(const std::vector<double>& v, const Shape& s) { return make(v, s, DType::Float32); }
}  // namespace

TEST_CASE("SeparableConv2D conformance", "[layers]") {
  run_layer_test({.what = "SeparableConv2D(4, 3)",
                  .make = [] { return std::make_shared<layers::SeparableConv2D>(4, 3); },
                  .input_shapes = {{2, 5, 5, 3}},
                  .trainable_weights = 3,
                  .weight_shapes = {{3, 3, 3, 1}, {1, 1, 3, 4}, {4}}});
  run_layer_test({.what = "SeparableConv2D(2, (2, 3), strides 2, same, depth_multiplier 2, relu)",
                  .make = [] {
                    return std::make_shared<layers::SeparableConv2D>(
                        2, layers::Size2{2, 3},
                        layers::SeparableConv2DOptions{
                            .strides = 2, .padding = "same", .depth_multiplier = 2, .activation = "relu"});
                  },
                  .input_shapes = {{2, 5, 5, 3}},
                  .trainable_weights = 3,
                  .weight_shapes = {{2, 3, 3, 2}, {1, 1, 6, 2}, {2}}});
  run_layer_test({.what = "SeparableConv2D(3, 3, strides 2, dilation 2, same, no bias)",
                  .make = [] {
                    return std::make_shared<layers::SeparableConv2D>(
                        3, 3,
                        layers::SeparableConv2DOptions{
                            .strides = 2, .padding = "same", .dilation_rate = 2, .use_bias = false});
                  },
                  .input_shapes = {{2, 6, 6, 2}},
                  .trainable_weights = 2,
                  .weight_shapes = {{3, 3, 2, 1}, {1, 1, 2, 3}}});
}

TEST_CASE("SeparableConv2D computes Keras's values, names and config", "[layers]") {
  backend::clear_session();
  layers::SeparableConv2D s(1, 1);
  const Tensor x = f32({1, 2}, {1, 1, 1, 2});
  s(x);
  REQUIRE(s.weights().size() == 3);
  CHECK(s.weights()[0].name() == "separable_conv2d/depthwise_kernel");
  CHECK(s.weights()[1].name() == "separable_conv2d/pointwise_kernel");
  CHECK(s.weights()[2].name() == "separable_conv2d/bias");
  s.set_weights({f32({3, 4}, {1, 1, 2, 1}), f32({1, 10}, {1, 1, 2, 1}), f32({0.5}, {1})});
  check_tensor(s(x), DType::Float32, {1, 1, 1, 1}, {83.5});
  // depth_multiplier 2: the depthwise output channel c * 2 + m feeds pointwise input c * 2 + m.
  layers::SeparableConv2D m(1, 1, {.depth_multiplier = 2, .use_bias = false});
  m(x);
  m.set_weights({f32({1, 2, 3, 4}, {1, 1, 2, 2}), f32({1, 10, 100, 1000}, {1, 1, 4, 1})});
  check_tensor(m(x), DType::Float32, {1, 1, 1, 1}, {1 + 20 + 600 + 8000});

  nlohmann::json c = m.get_config();
  CHECK(c["filters"] == 1);
  CHECK(c["depth_multiplier"] == 2);
  CHECK(c["kernel_size"] == nlohmann::json({1, 1}));
  CHECK(c["pointwise_initializer"]["class_name"] == "GlorotUniform");
  CHECK(c["pointwise_regularizer"].is_null());
  CHECK(c["pointwise_constraint"].is_null());
  CHECK(layers::SeparableConv2D(4, 3).compute_output_shape({-1, 7, -1, 3}) == Shape{-1, 5, -1, 4});
  CHECK(layers::SeparableConv2D(4, 3, {.strides = 2, .padding = "same"}).compute_output_shape({-1, 7, 7, 3}) ==
        Shape{-1, 4, 4, 4});
}

TEST_CASE("SeparableConv2D rejects bad arguments and incompatible inputs", "[layers]") {
  CHECK_THROWS_AS(layers::SeparableConv2D(0, 3), InvalidArgument);
  CHECK_THROWS_AS(layers::SeparableConv2D(2, 3, {.depth_multiplier = 0}), InvalidArgument);
  CHECK_THROWS_AS(layers::SeparableConv2D(2, 3, {.padding = "causal"}), InvalidArgument);
  CHECK_THROWS_AS(layers::SeparableConv2D(2, 3, {.data_format = "channels_first"}), InvalidArgument);
  layers::SeparableConv2D s(2, 3, {.name = "sep"});
  // Kernel taller than the input; wrong rank (found while building: the shape named has an unknown batch).
  for (const Shape& bad : {Shape{1, 2, 5, 3}, Shape{1, 5, 3}}) {
    try {
      s(ops::zeros(bad));
      FAIL("expected InvalidArgument");
    } catch (const InvalidArgument& e) {
      Shape named = bad;
      named[0] = -1;
      CHECK_THAT(e.what(), Catch::Contains("SeparableConv2D 'sep'") && Catch::Contains(named.to_string()));
    }
  }
  CHECK_FALSE(s.built());
  s(ops::zeros({1, 5, 5, 3}));
  try {
    s(ops::zeros({1, 5, 5, 4}));
    FAIL("expected InvalidArgument");
  } catch (const InvalidArgument& e) {
    CHECK_THAT(e.what(), Catch::Contains("SeparableConv2D 'sep'") && Catch::Contains("(1, 5, 5, 4)") &&
                             Catch::Contains("(batch, height, width, 3)"));
  }
}

TEST_CASE("SeparableConv2D loads a config written by Keras 3", "[layers]") {
  // keras.saving.serialize_keras_object(keras.layers.SeparableConv2D(4, 3, depth_multiplier=2)) from Keras 3.15.
  const auto j = nlohmann::json::parse(R"({"module": "keras.layers", "class_name": "SeparableConv2D", "config": {
    "name": "separable_conv2d", "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy",
    "config": {"name": "float32"}, "registered_name": null}, "depth_multiplier": 2, "filters": 4, "kernel_size":
    [3, 3], "strides": [1, 1], "padding": "valid", "data_format": "channels_last", "dilation_rate": [1, 1],
    "activation": "linear", "use_bias": true, "depthwise_initializer": {"module": "keras.initializers",
    "class_name": "GlorotUniform", "config": {"seed": null, "input_axes": null, "output_axes": null},
    "registered_name": null}, "pointwise_initializer": {"module": "keras.initializers", "class_name":
    "GlorotUniform", "config": {"seed": null, "input_axes": null, "output_axes": null}, "registered_name": null},
    "bias_initializer": {"module": "keras.initializers", "class_name": "Zeros", "config": {}, "registered_name":
    null}, "depthwise_regularizer": null, "pointwise_regularizer": null, "bias_regularizer": null,
    "activity_regularizer": null, "depthwise_constraint": null, "pointwise_constraint": null, "bias_constraint":
    null}, "registered_name": null})");
  LayerPtr l = deserialize_layer(j);
  auto* s = dynamic_cast<layers::SeparableConv2D*>(l.get());
  REQUIRE(s != nullptr);
  CHECK(s->options().depth_multiplier == 2);
  CHECK((*l)(ops::zeros({1, 5, 5, 2})).shape() == Shape{1, 3, 3, 4});
  CHECK(s->pointwise_kernel().shape() == Shape{1, 1, 4, 4});
  nlohmann::json bad = j;
  bad["config"]["pointwise_constraint"] = {{"class_name", "NonNeg"}, {"config", nlohmann::json::object()}};
  CHECK_THROWS_AS(deserialize_layer(bad), InvalidArgument);
}
