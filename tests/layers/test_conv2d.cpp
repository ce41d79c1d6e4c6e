#include <catch2/catch.hpp>

#include "framework/ember.h"
#include "tests/support/layer_testing.h"

using namespace ember;
using namespace ember::testing;

namespace {
Tensor f32(const std::vector<double>& v, const Shape& s) { return make(v, s, DType::Float32); }
}  // namespace

TEST_CASE("Conv2D conformance", "[layers]") {
  run_layer_test({.what = "Conv2D(4, 3)",
                  .make = [] { return std::make_shared<layers::Conv2D>(4, 3); },
                  .input_shapes = {{2, 5, 5, 3}},
                  .trainable_weights = 2,
                  .weight_shapes = {{3, 3, 3, 4}, {4}}});
  run_layer_test({.what = "Conv2D(2, (2, 3), strides 2, same, tanh)",
                  .make = [] {
                    return std::make_shared<layers::Conv2D>(
                        2, layers::Size2{2, 3}, layers::Conv2DOptions{.strides = 2, .padding = "same", .activation = "tanh"});
                  },
                  .input_shapes = {{2, 5, 5, 3}},
                  .trainable_weights = 2,
                  .weight_shapes = {{2, 3, 3, 2}, {2}}});
  run_layer_test({.what = "Conv2D(4, 2, dilation 2, groups 2, no bias)",
                  .make = [] {
                    return std::make_shared<layers::Conv2D>(
                        4, 2, layers::Conv2DOptions{.dilation_rate = 2, .groups = 2, .use_bias = false});
                  },
                  .input_shapes = {{2, 5, 5, 4}},
                  .trainable_weights = 1,
                  .weight_shapes = {{2, 2, 2, 4}}});
}

TEST_CASE("Conv2D computes Keras's values, names and config", "[layers]") {
  backend::clear_session();
  layers::Conv2D c(1, 2, {.strides = 1, .padding = "SAME"});
  CHECK(c.name() == "conv2d");
  const Tensor x = f32({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 3, 3, 1});
  c(x);
  REQUIRE(c.weights().size() == 2);
  CHECK(c.weights()[0].name() == "conv2d/kernel");
  CHECK(c.weights()[1].name() == "conv2d/bias");
  // Kernel HWIO [[1, 0], [0, 1]]: y = x[i][j] + x[i+1][j+1]; SAME pads the extra row/column bottom/right.
  c.set_weights({f32({1, 0, 0, 1}, {2, 2, 1, 1}), f32({0.5}, {1})});
  check_tensor(c(x), DType::Float32, {1, 3, 3, 1}, {6.5, 8.5, 3.5, 12.5, 14.5, 6.5, 7.5, 8.5, 9.5});

  layers::Conv2D valid(1, 2, {.use_bias = false});
  valid(x);
  valid.set_weights({f32({1, 0, 0, 1}, {2, 2, 1, 1})});
  check_tensor(valid(x), DType::Float32, {1, 2, 2, 1}, {6, 8, 12, 14});
  // Height and width may change after building (Keras's input spec fixes only the channels).
  check_tensor(valid(f32({1, 2, 3, 4, 5, 6}, {1, 2, 3, 1})), DType::Float32, {1, 1, 2, 1}, {6, 8});

  // TF's SAME rule with stride 2 on 3 pixels: one pad pixel, after.
  layers::Conv2D strided(1, 2, {.strides = 2, .padding = "same", .use_bias = false});
  strided(x);
  strided.set_weights({f32({1, 0, 0, 1}, {2, 2, 1, 1})});
  check_tensor(strided(x), DType::Float32, {1, 2, 2, 1}, {6, 3, 7, 9});

  // Channels mix through the HWIO kernel; relu applies after the bias.
  layers::Conv2D mix(3, 1, {.activation = "relu"});
  const Tensor p = f32({1, 2}, {1, 1, 1, 2});
  mix(p);
  mix.set_weights({f32({1, 2, -3, 4, 5, -6}, {1, 1, 2, 3}), f32({0, 0, 1}, {3})});
  check_tensor(mix(p), DType::Float32, {1, 1, 1, 3}, {9, 12, 0});

  // groups = 2: each half of the channels has its own filters.
  layers::Conv2D grouped(2, 1, {.groups = 2, .use_bias = false});
  grouped(p);
  REQUIRE(grouped.kernel().shape() == Shape{1, 1, 1, 2});
  grouped.set_weights({f32({3, 4}, {1, 1, 1, 2})});
  check_tensor(grouped(p), DType::Float32, {1, 1, 1, 2}, {3, 8});

  // Dilation 2 along the width: y[j] = x[j] + x[j + 2].
  layers::Conv2D dilated(1, layers::Size2{1, 2}, {.dilation_rate = layers::Size2{1, 2}, .use_bias = false});
  const Tensor row = f32({1, 2, 3, 4, 5}, {1, 1, 5, 1});
  dilated(row);
  dilated.set_weights({f32({1, 1}, {1, 2, 1, 1})});
  check_tensor(dilated(row), DType::Float32, {1, 1, 3, 1}, {4, 6, 8});

  nlohmann::json cfg = strided.get_config();
  CHECK(cfg["filters"] == 1);
  CHECK(cfg["kernel_size"] == nlohmann::json({2, 2}));
  CHECK(cfg["strides"] == nlohmann::json({2, 2}));
  CHECK(cfg["padding"] == "same");
  CHECK(cfg["data_format"] == "channels_last");
  CHECK(cfg["dilation_rate"] == nlohmann::json({1, 1}));
  CHECK(cfg["groups"] == 1);
  CHECK(cfg["activation"] == "linear");
  CHECK(cfg["use_bias"] == false);
  CHECK(cfg["kernel_initializer"]["class_name"] == "GlorotUniform");
  CHECK(cfg["bias_initializer"]["class_name"] == "Zeros");
  CHECK(cfg["kernel_regularizer"].is_null());
  CHECK(cfg["activity_regularizer"].is_null());
  CHECK(cfg["kernel_constraint"].is_null());
}

TEST_CASE("Conv2D output shapes follow TF's VALID/SAME rules", "[layers]") {
  layers::Conv2D c(8, 3, {.strides = 2});
  CHECK(c.compute_output_shape({-1, 28, 28, 1}) == Shape{-1, 13, 13, 8});
  CHECK(c.compute_output_shape({-1, -1, 7, 1}) == Shape{-1, -1, 3, 8});
  layers::Conv2D same(8, 3, {.strides = 2, .padding = "same"});
  CHECK(same.compute_output_shape({-1, 28, 27, 1}) == Shape{-1, 14, 14, 8});
  layers::Conv2D dil(8, 3, {.dilation_rate = 2});
  CHECK(dil.compute_output_shape({-1, 9, 9, 1}) == Shape{-1, 5, 5, 8});
}

TEST_CASE("Conv2D rejects bad arguments and incompatible inputs", "[layers]") {
  CHECK_THROWS_AS(layers::Conv2D(0, 3), InvalidArgument);
  CHECK_THROWS_AS(layers::Conv2D(4, 0), InvalidArgument);
  CHECK_THROWS_AS(layers::Conv2D(4, layers::Size2{3, -1}), InvalidArgument);
  CHECK_THROWS_AS(layers::Conv2D(4, 3, {.strides = 0}), InvalidArgument);
  CHECK_THROWS_AS(layers::Conv2D(4, 3, {.padding = "causal"}), InvalidArgument);
  CHECK_THROWS_AS(layers::Conv2D(4, 3, {.data_format = "channels_first"}), InvalidArgument);
  CHECK_THROWS_AS(layers::Conv2D(4, 3, {.strides = 2, .dilation_rate = 2}), InvalidArgument);
  CHECK_THROWS_AS(layers::Conv2D(4, 3, {.groups = 3}), InvalidArgument);
  CHECK_THROWS_AS(layers::Conv2D(4, 3, {.activation = "nope"}), InvalidArgument);
  try {
    layers::Conv2D(4, 3, {.data_format = "channels_first", .name = "c1"});
    FAIL("expected InvalidArgument");
  } catch (const InvalidArgument& e) {
    CHECK_THAT(e.what(), Catch::Contains("Conv2D 'c1'") && Catch::Contains("channels_first"));
  }

  layers::Conv2D c(4, 3, {.name = "conv"});
  CHECK_THROWS_AS(c(ops::zeros({2, 5, 5})), InvalidArgument);  // rank 3
  CHECK_FALSE(c.built());
  CHECK_THROWS_AS(c(ops::zeros({2, 2, 2, 3})), InvalidArgument);  // smaller than the kernel
  c(ops::zeros({2, 5, 5, 3}));
  try {
    c(ops::zeros({2, 5, 5, 2}));
    FAIL("expected InvalidArgument");
  } catch (const InvalidArgument& e) {
    CHECK_THAT(e.what(), Catch::Contains("Conv2D 'conv'") && Catch::Contains("(2, 5, 5, 2)") &&
                             Catch::Contains("(batch, height, width, 3)"));
  }
  CHECK_THROWS_AS(layers::Conv2D(4, 3, {.groups = 2})(ops::zeros({1, 5, 5, 3})), InvalidArgument);
}

TEST_CASE("Conv2D loads a config written by Keras 3", "[layers]") {
  // keras.saving.serialize_keras_object(keras.layers.Conv2D(4, 3, strides=2, padding="same")) from Keras 3.15.
  const auto j = nlohmann::json::parse(R"({"module": "keras.layers", "class_name": "Conv2D", "config": {"name": "conv2d_2",
    "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"},
    "registered_name": null}, "filters": 4, "kernel_size": [3, 3], "strides": [2, 2], "padding": "same",
    "data_format": "channels_last", "dilation_rate": [1, 1], "groups": 1, "activation": "relu", "use_bias": true,
    "kernel_initializer": {"module": "keras.initializers", "class_name": "GlorotUniform", "config": {"seed": null,
    "input_axes": null, "output_axes": null}, "registered_name": null}, "bias_initializer": {"module":
    "keras.initializers", "class_name": "Zeros", "config": {}, "registered_name": null}, "kernel_regularizer": null,
    "bias_regularizer": null, "activity_regularizer": null, "kernel_constraint": null, "bias_constraint": null},
    "registered_name": null})");
  LayerPtr l = deserialize_layer(j);
  auto* c = dynamic_cast<layers::Conv2D*>(l.get());
  REQUIRE(c != nullptr);
  CHECK(c->name() == "conv2d_2");
  CHECK(c->filters() == 4);
  CHECK(c->options().strides == layers::Size2(2));
  CHECK(c->options().padding == "same");
  CHECK(c->options().activation == "relu");
  CHECK((*l)(ops::zeros({1, 6, 6, 2})).shape() == Shape{1, 3, 3, 4});

  nlohmann::json first = j;
  first["config"]["data_format"] = "channels_first";
  CHECK_THROWS_AS(deserialize_layer(first), InvalidArgument);
  nlohmann::json constrained = j;
  constrained["config"]["kernel_constraint"] = {{"class_name", "MaxNorm"}, {"config", {{"max_value", 2}}}};
  CHECK_THROWS_AS(deserialize_layer(constrained), InvalidArgument);
}

TEST_CASE("The seed's CNN builds, runs and counts Keras's parameters", "[layers]") {
  Sequential model({
      layers::Input({28, 28, 1}),
      layers::Conv2D(32, 3, {.activation = "relu"}),
      layers::GlobalAveragePooling2D(),
      layers::Dense(10),
  });
  CHECK(model.count_params() == 32 * 9 + 32 + 32 * 10 + 10);
  Tensor y = model(random::uniform({4, 28, 28, 1}, {.seed = 3}));
  CHECK(y.shape() == Shape{4, 10});
}

TEST_CASE("Conv layers compute in float16 under mixed_float16 with float32 weights", "[layers]") {
  struct Scope {  // restores the global policy even when a check throws
    mixed_precision::Policy old = mixed_precision::global_policy();
    Scope() { mixed_precision::set_global_policy("mixed_float16"); }
    ~Scope() { mixed_precision::set_global_policy(old); }
  } scope;
  layers::Conv2D c(4, 3, {.padding = "same"});
  layers::DepthwiseConv2D d(3, {.depth_multiplier = 2});
  layers::MaxPooling2D m;
  layers::GlobalAveragePooling2D g;
  Tensor y = g(m(d(c(random::uniform({2, 8, 8, 3}, {.seed = 1})))));
  CHECK(y.dtype() == DType::Float16);
  CHECK(y.shape() == Shape{2, 8});
  CHECK(c.kernel().dtype() == DType::Float32);
  CHECK(d.kernel().dtype() == DType::Float32);
}
