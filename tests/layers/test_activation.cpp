// The activation layers: Activation, ReLU, Softmax (Keras's layers/activations).
#include <catch2/catch.hpp>

#include "framework/ember.h"
#include "tests/support/layer_testing.h"

using namespace ember;
using namespace ember::testing;

TEST_CASE("Activation conformance and values", "[layers]") {
  for (const char* name : {"tanh", "gelu", "softmax", "linear"}) {
    run_layer_test({.what = std::string("Activation(") + name + ")",
                    .make = [name] { return std::make_shared<layers::Activation>(name); },
                    .input_shapes = {{3, 4}},
                    .check_bad_input_shape = false});
  }
  backend::clear_session();
  layers::Activation a("relu");
  CHECK(a.name() == "activation");
  check_tensor(a(make({-1, 0, 2}, {1, 3}, DType::Float32)), DType::Float32, {1, 3}, {0, 0, 2});
  CHECK(a(ops::ones({2, 7, 5})).shape() == Shape{2, 7, 5});  // any shape after the first call
  CHECK(a.get_config()["activation"] == "relu");
  CHECK(layers::Activation("").get_config()["activation"] == "linear");
  CHECK_THROWS_AS(layers::Activation("nope"), InvalidArgument);
  nlohmann::json keras = nlohmann::json::parse(
      R"({"class_name": "Activation", "config": {"name": "act", "trainable": true, "dtype": "float32", "activation": "sigmoid"}})");
  LayerPtr l = deserialize_layer(keras);
  CHECK(l->name() == "act");
  check_tensor((*l)(make({0}, {1, 1}, DType::Float32)), DType::Float32, {1, 1}, {0.5});
}

TEST_CASE("ReLU conformance", "[layers]") {
  run_layer_test({.what = "ReLU()",
                  .make = [] { return std::make_shared<layers::ReLU>(); },
                  .input_shapes = {{3, 4}},
                  .check_bad_input_shape = false});
  run_layer_test({.what = "ReLU(max 0.5, slope 0.1, threshold 0.2)",
                  .make = [] {
                    return std::make_shared<layers::ReLU>(
                        layers::ReLUOptions{.max_value = 0.5, .negative_slope = 0.1, .threshold = 0.2});
                  },
                  .input_shapes = {{2, 3, 4}},
                  .check_bad_input_shape = false});
}

TEST_CASE("ReLU matches Keras's max_value, negative_slope and threshold", "[layers]") {
  const Tensor x = make({-10, -5, 0, 1.5, 2.5, 5, 10}, {1, 7}, DType::Float32);
  auto run = [&](layers::ReLUOptions o) { return layers::ReLU(o)(x); };
  // Values from keras.layers.ReLU(**kwargs)(x) (Keras 3.15).
  check_tensor(run({}), DType::Float32, {1, 7}, {0, 0, 0, 1.5, 2.5, 5, 10});
  check_tensor(run({.negative_slope = 0.5}), DType::Float32, {1, 7}, {-5, -2.5, 0, 1.5, 2.5, 5, 10});
  check_tensor(run({.max_value = 5.0}), DType::Float32, {1, 7}, {0, 0, 0, 1.5, 2.5, 5, 5});
  check_tensor(run({.threshold = 2.0}), DType::Float32, {1, 7}, {0, 0, 0, 0, 2.5, 5, 10});
  check_tensor(run({.max_value = 6.0}), DType::Float32, {1, 7}, {0, 0, 0, 1.5, 2.5, 5, 6});
  check_tensor(run({.max_value = 5.0, .negative_slope = 0.5, .threshold = 2.0}), DType::Float32, {1, 7},
               {-6, -3.5, -1, -0.25, 2.5, 5, 5});
  check_tensor(run({.negative_slope = 0.1, .threshold = 1.0}), DType::Float32, {1, 7},
               {-1.1, -0.6, -0.1, 1.5, 2.5, 5, 10});

  CHECK_THROWS_AS(layers::ReLU({.max_value = -1.0}), InvalidArgument);
  CHECK_THROWS_AS(layers::ReLU({.negative_slope = -0.1}), InvalidArgument);
  CHECK_THROWS_AS(layers::ReLU({.threshold = -1.0}), InvalidArgument);

  backend::clear_session();
  layers::ReLU r({.max_value = 6.0});
  CHECK(r.name() == "re_lu");
  nlohmann::json c = r.get_config();
  CHECK(c["max_value"] == 6.0);
  CHECK(c["negative_slope"] == 0.0);
  CHECK(c["threshold"] == 0.0);
  CHECK(layers::ReLU().get_config()["max_value"].is_null());
}

TEST_CASE("Softmax conformance", "[layers]") {
  run_layer_test({.what = "Softmax()",
                  .make = [] { return std::make_shared<layers::Softmax>(); },
                  .input_shapes = {{3, 4}},
                  .check_bad_input_shape = false});
  run_layer_test({.what = "Softmax(axis 1) on rank 3",
                  .make = [] { return std::make_shared<layers::Softmax>(layers::SoftmaxOptions{.axis = {1}}); },
                  .input_shapes = {{2, 3, 4}},
                  .check_bad_input_shape = false});
  run_layer_test({.what = "Softmax(axis (1, 2))",
                  .make = [] { return std::make_shared<layers::Softmax>(layers::SoftmaxOptions{.axis = {1, 2}}); },
                  .input_shapes = {{2, 3, 4}},
                  .check_bad_input_shape = false});
}

TEST_CASE("Softmax values, axes, mixed precision and config", "[layers]") {
  // keras.layers.Softmax()([[1, 2, 3]]) and Softmax(axis=[1, 2])([[[1, 2], [3, 4]]]).
  check_tensor(layers::Softmax()(make({1, 2, 3}, {1, 3}, DType::Float32)), DType::Float32, {1, 3},
               {0.09003057330846786, 0.2447284758090973, 0.6652409434318542});
  check_tensor(layers::Softmax({.axis = {1, 2}})(make({1, 2, 3, 4}, {1, 2, 2}, DType::Float32)), DType::Float32,
               {1, 2, 2}, {0.03205860033631325, 0.08714430779218674, 0.2368827909231186, 0.6439141631126404});
  CHECK_THROWS_AS(layers::Softmax({.axis = {2}})(ops::ones({2, 2})), InvalidArgument);

  // Under mixed_float16 the output stays in the compute dtype, as in Keras.
  layers::Softmax half({.dtype = "mixed_float16"});
  Tensor y = half(make({1, 2, 3}, {1, 3}, DType::Float32));
  check_tensor(y, DType::Float16, {1, 3}, {0.09003057330846786, 0.2447284758090973, 0.6652409434318542}, 2e-3,
               1e-4);

  CHECK(layers::Softmax().get_config()["axis"] == -1);
  CHECK(layers::Softmax({.axis = {1, 2}}).get_config()["axis"] == nlohmann::json({1, 2}));
  nlohmann::json keras = nlohmann::json::parse(
      R"({"class_name": "Softmax", "config": {"name": "sm", "trainable": true, "dtype": "float32", "axis": [1]}})");
  CHECK(deserialize_layer(keras)->get_config()["axis"] == 1);
}
