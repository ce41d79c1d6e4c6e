#include <catch2/catch.hpp>

#include "framework/ember.h"
#include "tests/support/layer_testing.h"

using namespace ember;
using namespace ember::testing;

namespace {
Tensor f32(const std::vector<double>& v, const Shape& s) { return make(v, s, DType::Float32); }
}  // namespace

TEST_CASE("Conv2DTranspose conformance", "[layers]") {
  run_layer_test({.what = "Conv2DTranspose(4, 3)",
                  .make = [] { return std::make_shared<layers::Conv2DTranspose>(4, 3); },
                  .input_shapes = {{2, 4, 4, 3}},
                  .trainable_weights = 2,
                  .weight_shapes = {{3, 3, 4, 3}, {4}}});
  run_layer_test({.what = "Conv2DTranspose(2, (2, 3), strides 2, same, tanh)",
                  .make = [] {
                    return std::make_shared<layers::Conv2DTranspose>(
                        2, layers::Size2{2, 3},
                        layers::Conv2DTransposeOptions{.strides = 2, .padding = "same", .activation = "tanh"});
                  },
                  .input_shapes = {{2, 3, 4, 2}},
                  .trainable_weights = 2,
                  .weight_shapes = {{2, 3, 2, 2}, {2}}});
  run_layer_test({.what = "Conv2DTranspose(3, 3, strides (2, 3), output_padding (1, 2), no bias)",
                  .make = [] {
                    return std::make_shared<layers::Conv2DTranspose>(
                        3, 3,
                        layers::Conv2DTransposeOptions{
                            .strides = {2, 3}, .output_padding = layers::Size2{1, 2}, .use_bias = false});
                  },
                  .input_shapes = {{2, 3, 3, 2}},
                  .trainable_weights = 1,
                  .weight_shapes = {{3, 3, 3, 2}}});
  run_layer_test({.what = "Conv2DTranspose(2, 3, dilation 2, same)",
                  .make = [] {
                    return std::make_shared<layers::Conv2DTranspose>(
                        2, 3, layers::Conv2DTransposeOptions{.padding = "same", .dilation_rate = 2});
                  },
                  .input_shapes = {{2, 5, 5, 2}},
                  .trainable_weights = 2,
                  .weight_shapes = {{3, 3, 2, 2}, {2}}});
}

TEST_CASE("Conv2DTranspose computes Keras's values, names and config", "[layers]") {
  backend::clear_session();
  // Each input pixel adds value * kernel at stride 2: the kernel is not flipped.
  layers::Conv2DTranspose t(1, 2, {.strides = 2});
  const Tensor x = f32({1, 2, 3, 4}, {1, 2, 2, 1});
  t(x);
  REQUIRE(t.weights().size() == 2);
  CHECK(t.weights()[0].name() == "conv2d_transpose/kernel");
  CHECK(t.weights()[1].name() == "conv2d_transpose/bias");
  t.set_weights({f32({1, 2, 3, 4}, {2, 2, 1, 1}), f32({0.5}, {1})});
  check_tensor(t(x), DType::Float32, {1, 4, 4, 1},
               {1.5, 2.5, 2.5, 4.5, 3.5, 4.5, 6.5, 8.5, 3.5, 6.5, 4.5, 8.5, 9.5, 12.5, 12.5, 16.5});
  // Overlapping windows at stride 1 add up; the kernel is (kh, kw, filters, in_channels).
  layers::Conv2DTranspose overlap(1, {1, 2}, {.use_bias = false});
  const Tensor row = f32({1, 2}, {1, 1, 2, 1});
  overlap(row);
  overlap.set_weights({f32({10, 1}, {1, 2, 1, 1})});
  check_tensor(overlap(row), DType::Float32, {1, 1, 3, 1}, {10, 21, 2});
  layers::Conv2DTranspose channels(2, 1, {.use_bias = false});
  const Tensor rgb = f32({1, 2, 3}, {1, 1, 1, 3});
  channels(rgb);
  CHECK(channels.kernel().shape() == Shape{1, 1, 2, 3});
  channels.set_weights({f32({1, 0, 0, 0, 1, 1}, {1, 1, 2, 3})});
  check_tensor(channels(rgb), DType::Float32, {1, 1, 1, 2}, {1, 5});

  // Keras's output lengths.
  CHECK(layers::Conv2DTranspose(4, 3).compute_output_shape({-1, 5, 5, 3}) == Shape{-1, 7, 7, 4});
  CHECK(layers::Conv2DTranspose(4, 3, {.strides = 2}).compute_output_shape({-1, 5, 5, 3}) == Shape{-1, 11, 11, 4});
  CHECK(layers::Conv2DTranspose(4, 2, {.strides = 3}).compute_output_shape({-1, 5, 5, 3}) == Shape{-1, 15, 15, 4});
  CHECK(layers::Conv2DTranspose(4, 3, {.strides = 2, .padding = "same"}).compute_output_shape({-1, 5, -1, 3}) ==
        Shape{-1, 10, -1, 4});
  CHECK(layers::Conv2DTranspose(4, 3, {.strides = 2, .padding = "same", .output_padding = layers::Size2(0)})
            .compute_output_shape({-1, 5, 5, 3}) == Shape{-1, 9, 9, 4});
  CHECK(layers::Conv2DTranspose(4, 3, {.strides = {2, 3}, .output_padding = layers::Size2{1, 2}})
            .compute_output_shape({-1, 5, 5, 3}) == Shape{-1, 12, 17, 4});
  CHECK(layers::Conv2DTranspose(4, 3, {.dilation_rate = 2}).compute_output_shape({-1, 5, 5, 3}) ==
        Shape{-1, 9, 9, 4});

  nlohmann::json c = t.get_config();
  CHECK(c["kernel_size"] == nlohmann::json({2, 2}));
  CHECK(c["strides"] == nlohmann::json({2, 2}));
  CHECK(c["output_padding"].is_null());
  CHECK(c["padding"] == "valid");
  CHECK(c["activation"] == "linear");
  CHECK(c["kernel_constraint"].is_null());
  CHECK(layers::Conv2DTranspose(2, 3, {.strides = 2, .output_padding = layers::Size2(1)}).get_config()["output_padding"] ==
        nlohmann::json({1, 1}));
}

TEST_CASE("Conv2DTranspose rejects bad arguments and incompatible inputs", "[layers]") {
  CHECK_THROWS_AS(layers::Conv2DTranspose(0, 3), InvalidArgument);
  CHECK_THROWS_AS(layers::Conv2DTranspose(2, 0), InvalidArgument);
  CHECK_THROWS_AS(layers::Conv2DTranspose(2, 3, {.padding = "causal"}), InvalidArgument);
  CHECK_THROWS_AS(layers::Conv2DTranspose(2, 3, {.strides = 2, .dilation_rate = 2}), InvalidArgument);
  CHECK_THROWS_AS(layers::Conv2DTranspose(2, 3, {.data_format = "channels_first"}), InvalidArgument);
  // output_padding must be below the stride.
  try {
    layers::Conv2DTranspose(2, 3, {.strides = 2, .output_padding = layers::Size2(2), .name = "t"});
    FAIL("expected InvalidArgument");
  } catch (const InvalidArgument& e) {
    CHECK_THAT(e.what(), Catch::Contains("Conv2DTranspose 't'") && Catch::Contains("output_padding") &&
                             Catch::Contains("(2, 2)"));
  }
  CHECK_THROWS_AS(layers::Conv2DTranspose(2, 3, {.output_padding = layers::Size2(-1)}), InvalidArgument);
  // "same" with an even kernel and output_padding 0 gives an output whose convolution is one row short (TF refuses).
  layers::Conv2DTranspose even(2, 2, {.strides = 2, .padding = "same", .output_padding = layers::Size2(0), .name = "e"});
  try {
    even(ops::zeros({1, 5, 5, 3}));
    FAIL("expected InvalidArgument");
  } catch (const InvalidArgument& e) {
    CHECK_THAT(e.what(), Catch::Contains("Conv2DTranspose 'e'") && Catch::Contains("(1, 5, 5, 3)"));
  }
  layers::Conv2DTranspose t(2, 3, {.name = "t2"});
  try {
    t(ops::zeros({1, 5, 3}));
    FAIL("expected InvalidArgument");
  } catch (const InvalidArgument& e) {
    CHECK_THAT(e.what(), Catch::Contains("Conv2DTranspose 't2'") && Catch::Contains("(-1, 5, 3)") &&
                             Catch::Contains("rank-4"));
  }
  t(ops::zeros({1, 5, 5, 3}));
  try {
    t(ops::zeros({1, 5, 5, 4}));
    FAIL("expected InvalidArgument");
  } catch (const InvalidArgument& e) {
    CHECK_THAT(e.what(), Catch::Contains("Conv2DTranspose 't2'") && Catch::Contains("(1, 5, 5, 4)") &&
                             Catch::Contains("(batch, height, width, 3)"));
  }
}

TEST_CASE("Conv2DTranspose loads a config written by Keras 3", "[layers]") {
  // keras.saving.serialize_keras_object(keras.layers.Conv2DTranspose(4, 3, strides=2, padding="same",
  // output_padding=1)) from Keras 3.15.
  const auto j = nlohmann::json::parse(R"({"module": "keras.layers", "class_name": "Conv2DTranspose", "config": {
    "name": "conv2d_transpose", "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy",
    "config": {"name": "float32"}, "registered_name": null}, "filters": 4, "kernel_size": [3, 3], "strides": [2, 2],
    "padding": "same", "output_padding": [1, 1], "data_format": "channels_last", "dilation_rate": [1, 1],
    "activation": "linear", "use_bias": true, "kernel_initializer": {"module": "keras.initializers", "class_name":
    "GlorotUniform", "config": {"seed": null, "input_axes": null, "output_axes": null}, "registered_name": null},
    "bias_initializer": {"module": "keras.initializers", "class_name": "Zeros", "config": {}, "registered_name":
    null}, "kernel_regularizer": null, "bias_regularizer": null, "activity_regularizer": null, "kernel_constraint":
    null, "bias_constraint": null}, "registered_name": null})");
  LayerPtr l = deserialize_layer(j);
  auto* t = dynamic_cast<layers::Conv2DTranspose*>(l.get());
  REQUIRE(t != nullptr);
  REQUIRE(t->options().output_padding.has_value());
  CHECK(*t->options().output_padding == layers::Size2(1));
  CHECK((*l)(ops::zeros({2, 5, 5, 3})).shape() == Shape{2, 10, 10, 4});
  nlohmann::json bad = j;
  bad["config"]["output_padding"] = {2, 2};
  CHECK_THROWS_AS(deserialize_layer(bad), InvalidArgument);
}
