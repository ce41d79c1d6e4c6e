#include <catch2/catch.hpp>

#include "framework/ember.h"
#include "tests/support/layer_testing.h"

using namespace ember;
using namespace ember::testing;

namespace {
Tensor f32(const std::vector<double>& v, const Shape& s) { return make(v, s, DType::Float32); }

// The message of the InvalidArgument f throws (fails the test if it throws none or another type).
template <class F>
std::string invalid_argument_message(F&& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  FAIL("expected InvalidArgument");
  return "";
}
}  // namespace

TEST_CASE("Conv1D conformance", "[layers]") {
  run_layer_test({.what = "Conv1D(4, 3)",
                  .make = [] { return std::make_shared<layers::Conv1D>(4, 3); },
                  .input_shapes = {{2, 7, 3}},
                  .trainable_weights = 2,
                  .weight_shapes = {{3, 3, 4}, {4}}});
  run_layer_test({.what = "Conv1D(3, 2, strides 2, same, tanh)",
                  .make = [] {
                    return std::make_shared<layers::Conv1D>(
                        3, 2, layers::Conv1DOptions{.strides = 2, .padding = "same", .activation = "tanh"});
                  },
                  .input_shapes = {{2, 7, 3}},
                  .trainable_weights = 2,
                  .weight_shapes = {{2, 3, 3}, {3}}});
  run_layer_test({.what = "Conv1D(2, 3, causal, dilation 2, no bias)",
                  .make = [] {
                    return std::make_shared<layers::Conv1D>(
                        2, 3, layers::Conv1DOptions{.padding = "causal", .dilation_rate = 2, .use_bias = false});
                  },
                  .input_shapes = {{2, 6, 2}},
                  .trainable_weights = 1,
                  .weight_shapes = {{3, 2, 2}}});
  run_layer_test({.what = "Conv1D(4, 2, groups 2, relu)",
                  .make = [] {
                    return std::make_shared<layers::Conv1D>(4, 2, layers::Conv1DOptions{.groups = 2, .activation = "relu"});
                  },
                  .input_shapes = {{2, 5, 4}},
                  .trainable_weights = 2,
                  .weight_shapes = {{2, 2, 4}, {4}}});
}

TEST_CASE("Conv1D computes Keras's values, names and config", "[layers]") {
  backend::clear_session();
  const Tensor x = f32({1, 2, 3, 4}, {1, 4, 1});
  layers::Conv1D valid(1, 2);
  valid(x);
  REQUIRE(valid.weights().size() == 2);
  CHECK(valid.weights()[0].name() == "conv1d/kernel");
  CHECK(valid.weights()[1].name() == "conv1d/bias");
  valid.set_weights({f32({1, 10}, {2, 1, 1}), f32({0.5}, {1})});
  check_tensor(valid(x), DType::Float32, {1, 3, 1}, {21.5, 32.5, 43.5});

  // "same" puts TF's odd padding step after; "causal" puts (k - 1) * dilation steps before.
  layers::Conv1D same(1, 2, {.padding = "same", .use_bias = false});
  same(x);
  same.set_weights({f32({1, 10}, {2, 1, 1})});
  check_tensor(same(x), DType::Float32, {1, 4, 1}, {21, 32, 43, 4});
  layers::Conv1D causal(1, 2, {.padding = "causal", .use_bias = false});
  causal(x);
  causal.set_weights({f32({1, 10}, {2, 1, 1})});
  check_tensor(causal(x), DType::Float32, {1, 4, 1}, {10, 21, 32, 43});
  layers::Conv1D dilated(1, 2, {.padding = "causal", .dilation_rate = 2, .use_bias = false});
  dilated(x);
  dilated.set_weights({f32({1, 10}, {2, 1, 1})});
  check_tensor(dilated(x), DType::Float32, {1, 4, 1}, {10, 20, 31, 42});

  // Two groups: output channel 0 sees input channel 0 only, output channel 1 input channel 1.
  layers::Conv1D grouped(2, 1, {.groups = 2, .use_bias = false});
  const Tensor x2 = f32({1, 2, 3, 4}, {1, 2, 2});
  grouped(x2);
  CHECK(grouped.kernel().shape() == Shape{1, 1, 2});
  grouped.set_weights({f32({10, 100}, {1, 1, 2})});
  check_tensor(grouped(x2), DType::Float32, {1, 2, 2}, {10, 200, 30, 400});

  nlohmann::json c = causal.get_config();
  CHECK(c["kernel_size"] == nlohmann::json({2}));
  CHECK(c["strides"] == nlohmann::json({1}));
  CHECK(c["dilation_rate"] == nlohmann::json({1}));
  CHECK(c["padding"] == "causal");
  CHECK(c["groups"] == 1);
  CHECK(c["activation"] == "linear");
  CHECK(c["kernel_initializer"]["class_name"] == "GlorotUniform");
  CHECK(c["kernel_constraint"].is_null());
  CHECK(layers::Conv1D(4, 3).compute_output_shape({-1, 7, 2}) == Shape{-1, 5, 4});
  CHECK(layers::Conv1D(4, 3, {.strides = 2, .padding = "causal"}).compute_output_shape({-1, 7, 2}) ==
        Shape{-1, 4, 4});
  CHECK(layers::Conv1D(4, 3).compute_output_shape({-1, -1, 2}) == Shape{-1, -1, 4});
}

TEST_CASE("Conv1D rejects bad arguments and incompatible inputs", "[layers]") {
  CHECK_THROWS_AS(layers::Conv1D(0, 3), InvalidArgument);
  CHECK_THROWS_AS(layers::Conv1D(2, 0), InvalidArgument);
  CHECK_THROWS_AS(layers::Conv1D(2, 3, {.strides = 0}), InvalidArgument);
  CHECK_THROWS_AS(layers::Conv1D(3, 3, {.groups = 2}), InvalidArgument);
  CHECK_THROWS_AS(layers::Conv1D(2, 3, {.padding = "full"}), InvalidArgument);
  CHECK_THROWS_AS(layers::Conv1D(2, 3, {.data_format = "channels_first"}), InvalidArgument);
  CHECK_THROWS_AS(layers::Conv1D(2, 3, {.strides = 2, .dilation_rate = 2}), InvalidArgument);
  CHECK_THROWS_AS(layers::Conv1D(2, 3, {.activation = "no_such_activation"}), InvalidArgument);
  CHECK_THAT(invalid_argument_message([] { layers::Conv1D(2, 3, {.padding = "full", .name = "c"}); }),
             Catch::Contains("Conv1D 'c'") && Catch::Contains("causal") && Catch::Contains("full"));

  layers::Conv1D c(2, 3, {.name = "c1"});
  // Wrong rank, kernel longer than the input, channels not divisible by groups (found while building, so the
  // shape named has an unknown batch).
  CHECK_THAT(invalid_argument_message([&] { c(ops::zeros({1, 5, 5, 3})); }),
             Catch::Contains("Conv1D 'c1'") && Catch::Contains("(-1, 5, 5, 3)") && Catch::Contains("rank-3"));
  CHECK_THAT(invalid_argument_message([&] { c(ops::zeros({1, 2, 3})); }),
             Catch::Contains("Conv1D 'c1'") && Catch::Contains("(-1, 2, 3)") && Catch::Contains("too short"));
  CHECK_THROWS_AS(layers::Conv1D(4, 1, {.groups = 2})(ops::zeros({1, 3, 3})), InvalidArgument);
  c(ops::zeros({1, 5, 3}));
  CHECK(c(ops::zeros({2, 9, 3})).shape() == Shape{2, 7, 2});  // a built layer takes any length
  CHECK_THAT(invalid_argument_message([&] { c(ops::zeros({1, 5, 4})); }),
             Catch::Contains("Conv1D 'c1'") && Catch::Contains("(1, 5, 4)") && Catch::Contains("(batch, steps, 3)"));
}

TEST_CASE("Conv1D loads a config written by Keras 3", "[layers]") {
  // keras.saving.serialize_keras_object(keras.layers.Conv1D(4, 3, padding="causal")) from Keras 3.15.
  const auto j = nlohmann::json::parse(R"({"module": "keras.layers", "class_name": "Conv1D", "config": {
    "name": "conv1d", "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy", "config":
    {"name": "float32"}, "registered_name": null}, "filters": 4, "kernel_size": [3], "strides": [1],
    "padding": "causal", "data_format": "channels_last", "dilation_rate": [1], "groups": 1, "activation": "linear",
    "use_bias": true, "kernel_initializer": {"module": "keras.initializers", "class_name": "GlorotUniform",
    "config": {"seed": null, "input_axes": null, "output_axes": null}, "registered_name": null},
    "bias_initializer": {"module": "keras.initializers", "class_name": "Zeros", "config": {}, "registered_name":
    null}, "kernel_regularizer": null, "bias_regularizer": null, "activity_regularizer": null,
    "kernel_constraint": null, "bias_constraint": null}, "registered_name": null})");
  LayerPtr l = deserialize_layer(j);
  auto* c = dynamic_cast<layers::Conv1D*>(l.get());
  REQUIRE(c != nullptr);
  CHECK(c->options().padding == "causal");
  CHECK((*l)(ops::zeros({2, 7, 2})).shape() == Shape{2, 7, 4});
  nlohmann::json bad = j;
  bad["config"]["kernel_size"] = {3, 3};
  CHECK_THROWS_AS(deserialize_layer(bad), InvalidArgument);
  bad = j;
  bad["config"]["kernel_constraint"] = {{"class_name", "NonNeg"}, {"config", nlohmann::json::object()}};
  CHECK_THROWS_AS(deserialize_layer(bad), InvalidArgument);
}
