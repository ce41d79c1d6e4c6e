// The merge layers: Add, Subtract, Multiply, Average, Concatenate (Keras's layers/merging).
#include <catch2/catch.hpp>

#include "framework/ember.h"
#include "tests/support/layer_testing.h"

using namespace ember;
using namespace ember::testing;

TEST_CASE("Merge layers conformance", "[layers]") {
  run_layer_test({.what = "Add, 3 inputs",
                  .make = [] { return std::make_shared<layers::Add>(); },
                  .input_shapes = {{2, 3}, {2, 3}, {2, 3}}});
  run_layer_test({.what = "Add, broadcasting (2, 4, 3) + (2, 1, 3) + (2, 3)",
                  .make = [] { return std::make_shared<layers::Add>(); },
                  .input_shapes = {{2, 4, 3}, {2, 1, 3}, {2, 3}}});
  run_layer_test({.what = "Subtract",
                  .make = [] { return std::make_shared<layers::Subtract>(); },
                  .input_shapes = {{2, 3}, {2, 3}}});
  run_layer_test({.what = "Multiply",
                  .make = [] { return std::make_shared<layers::Multiply>(); },
                  .input_shapes = {{2, 2, 3}, {2, 2, 3}}});
  run_layer_test({.what = "Average",
                  .make = [] { return std::make_shared<layers::Average>(); },
                  .input_shapes = {{2, 3}, {2, 3}, {2, 3}}});
  run_layer_test({.what = "Concatenate()",
                  .make = [] { return std::make_shared<layers::Concatenate>(); },
                  .input_shapes = {{2, 3}, {2, 4}},
                  .check_bad_input_shape = false});  // the concatenation axis may change
  run_layer_test({.what = "Concatenate(axis 1) on rank 3",
                  .make = [] { return std::make_shared<layers::Concatenate>(1); },
                  .input_shapes = {{2, 3, 4}, {2, 1, 4}, {2, 2, 4}}});
}

TEST_CASE("Merge layers compute Keras's values", "[layers]") {
  const Tensor a = make({1, 2, 3, 4, 5, 6}, {2, 3}, DType::Float32);
  const Tensor b = make({6, 5, 4, 3, 2, 1}, {2, 3}, DType::Float32);
  backend::clear_session();
  layers::Add add;
  CHECK(add.name() == "add");
  check_tensor(add({a, b}), DType::Float32, {2, 3}, {7, 7, 7, 7, 7, 7});
  check_tensor(layers::Subtract()({a, b}), DType::Float32, {2, 3}, {-5, -3, -1, 1, 3, 5});
  check_tensor(layers::Multiply()({a, b}), DType::Float32, {2, 3}, {6, 10, 12, 12, 10, 6});
  check_tensor(layers::Average()({a, b, a}), DType::Float32, {2, 3},
               {8.0 / 3, 9.0 / 3, 10.0 / 3, 11.0 / 3, 12.0 / 3, 13.0 / 3});
  check_tensor(layers::Concatenate()({a, b}), DType::Float32, {2, 6}, {1, 2, 3, 6, 5, 4, 4, 5, 6, 3, 2, 1});
  check_tensor(layers::Concatenate(0)({a, b}), DType::Float32, {4, 3}, {1, 2, 3, 4, 5, 6, 6, 5, 4, 3, 2, 1});
  // Keras's broadcasting: (2, 3) + (2, 1), and a lower-rank input gains axes after the batch axis
  // (keras.layers.Add()([ones((2, 2, 3)), arange(6).reshape(2, 3)])).
  check_tensor(layers::Add()({ops::ones({2, 3}), make({0, 1}, {2, 1}, DType::Float32)}), DType::Float32, {2, 3},
               {1, 1, 1, 2, 2, 2});
  check_tensor(layers::Add()({ops::ones({2, 2, 3}), make(iota(6), {2, 3}, DType::Float32)}), DType::Float32, {2, 2, 3},
               {1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6});
  CHECK(layers::Add().compute_output_shape(std::vector<Shape>{{-1, 4, 1}, {-1, 3}}) == Shape{-1, 4, 3});
  CHECK(layers::Concatenate(1).compute_output_shape(std::vector<Shape>{{-1, 2, 5}, {-1, 3, 5}}) == Shape{-1, 5, 5});
  CHECK(layers::Concatenate(1).compute_output_shape(std::vector<Shape>{{-1, -1, 5}, {-1, 3, 5}}) == Shape{-1, -1, 5});
}

TEST_CASE("Merge layers reject shapes they cannot merge", "[layers]") {
  const Tensor x23 = ops::ones({2, 3}), x24 = ops::ones({2, 4});
  CHECK_THROWS_AS(layers::Add()({x23, x24}), InvalidArgument);
  CHECK_THROWS_AS(layers::Multiply()({x23, ops::ones({1, 3})}), InvalidArgument);  // batch sizes differ
  CHECK_THROWS_AS(layers::Subtract()({x23, x23, x23}), InvalidArgument);
  CHECK_THROWS_AS(layers::Subtract()(x23), InvalidArgument);
  CHECK_THROWS_AS(layers::Concatenate()({ops::ones({2, 3, 4}), ops::ones({2, 5, 4})}), InvalidArgument);
  CHECK_THROWS_AS(layers::Concatenate()({ops::ones({2, 3, 4}), ops::ones({2, 4})}), InvalidArgument);
  CHECK_THROWS_AS(layers::Concatenate(3)({x23, x23}), InvalidArgument);
  try {
    layers::Add({.name = "sum"})({x23, x24});
    FAIL("expected InvalidArgument");
  } catch (const InvalidArgument& e) {
    const std::string msg = e.what();
    CHECK(msg.find("Add 'sum'") != std::string::npos);
    CHECK(msg.find(", 3)") != std::string::npos);  // found by the build, which sees no batch size
    CHECK(msg.find(", 4)") != std::string::npos);
  }
  // A built layer takes any shapes it can merge, and rejects the others.
  layers::Add add;
  add({x23, x23});
  CHECK(add({x24, x24}).shape() == Shape{2, 4});
  CHECK_THROWS_AS(add({x23, x24}), InvalidArgument);
}

TEST_CASE("Merge layers in a functional model, and their configs", "[layers]") {
  Tensor in = layers::Input({4});
  Tensor h1 = layers::Dense(3)(in);
  Tensor h2 = layers::Dense(3)(in);
  Tensor sum = layers::Add()({h1, h2});
  Tensor cat = layers::Concatenate()({sum, h1});
  CHECK(cat.shape() == Shape{-1, 6});
  Model m(in, cat);
  Tensor y = m(ops::ones({5, 4}));
  CHECK(y.shape() == Shape{5, 6});
  CHECK(m.trainable_weights().size() == 4);

  nlohmann::json keras = nlohmann::json::parse(R"({"class_name": "Concatenate", "config": {"name": "cat",
      "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"},
      "registered_name": null}, "axis": 1}})");
  LayerPtr l = deserialize_layer(keras);
  CHECK(l->class_name() == "Concatenate");
  CHECK(l->get_config()["axis"] == 1);
  for (const char* cls : {"Add", "Subtract", "Multiply", "Average"}) {
    nlohmann::json j = {{"class_name", cls}, {"config", {{"name", std::string("m_") + cls}, {"trainable", true}, {"dtype", "float32"}}}};
    LayerPtr merged = deserialize_layer(j);
    CHECK(merged->class_name() == cls);
    CHECK(merged->name() == std::string("m_") + cls);
  }
}
