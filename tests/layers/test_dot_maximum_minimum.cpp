// The merge layers Dot, Maximum and Minimum (Keras's layers/merging).
#include <catch2/catch.hpp>

#include <cmath>

#include "framework/ember.h"
#include "tests/support/layer_testing.h"

using namespace ember;
using namespace ember::testing;

TEST_CASE("Maximum and Minimum conformance and values", "[layers]") {
  run_layer_test({.what = "Maximum() of 2",
                  .make = [] { return std::make_shared<layers::Maximum>(); },
                  .input_shapes = {{2, 3, 4}, {2, 3, 4}}});
  run_layer_test({.what = "Minimum() of 3",
                  .make = [] { return std::make_shared<layers::Minimum>(); },
                  .input_shapes = {{3, 4}, {3, 4}, {3, 4}}});
  const Tensor a = make({1, 5, -2, 0}, {2, 2}, DType::Float32), b = make({3, 2, -1, -4}, {2, 2}, DType::Float32),
               c = make({2, 2, 2, 2}, {2, 2}, DType::Float32);
  check_tensor(layers::Maximum()({a, b, c}), DType::Float32, {2, 2}, {3, 5, 2, 2});
  check_tensor(layers::Minimum()({a, b, c}), DType::Float32, {2, 2}, {1, 2, -2, -4});
  // Per-sample broadcasting as the other merge layers: (2, 2) against (2, 1).
  check_tensor(layers::Maximum()({a, make({0, 10}, {2, 1}, DType::Float32)}), DType::Float32, {2, 2}, {1, 5, 10, 10});
  try {
    layers::Maximum()({ops::ones({2, 3}), ops::ones({2, 4})});
    FAIL("expected InvalidArgument");
  } catch (const InvalidArgument& e) {
    const std::string m = e.what();
    CHECK(m.find("Maximum 'maximum") != std::string::npos);
    CHECK(m.find("(-1, 3)") != std::string::npos);  // checked at build, where the batch is unknown
    CHECK(m.find("(-1, 4)") != std::string::npos);
  }
  CHECK_THROWS_AS(layers::Minimum()({ops::ones({2, 3}), ops::ones({3, 3})}), InvalidArgument);  // batch sizes
  backend::clear_session();
  CHECK(layers::Maximum().name() == "maximum");
  CHECK(layers::Minimum().name() == "minimum");
  LayerPtr l = deserialize_layer(nlohmann::json::parse(R"({"class_name": "Minimum", "config": {"name": "mn",
      "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"},
      "registered_name": null}}})"));
  CHECK(l->class_name() == "Minimum");
  CHECK(l->name() == "mn");
}

TEST_CASE("Dot conformance", "[layers]") {
  run_layer_test({.what = "Dot(axes 1) of two vectors",
                  .make = [] { return std::make_shared<layers::Dot>(1); },
                  .input_shapes = {{3, 4}, {3, 4}}});
  run_layer_test({.what = "Dot(axes (2, 1)): a batched matrix product",
                  .make = [] { return std::make_shared<layers::Dot>(std::array<int64_t, 2>{2, 1}); },
                  .input_shapes = {{2, 3, 4}, {2, 4, 5}}});
  run_layer_test({.what = "Dot(axes (1, 2), normalize) of ranks 3 and 4",
                  .make = [] {
                    return std::make_shared<layers::Dot>(std::array<int64_t, 2>{1, 2}, layers::DotOptions{.normalize = true});
                  },
                  .input_shapes = {{2, 3, 2}, {2, 4, 3, 2}},
                  .check_bad_input_shape = false});  // the last axes are not the dot axes here
  run_layer_test({.what = "Dot(axes -1) of a matrix and a vector",
                  .make = [] { return std::make_shared<layers::Dot>(-1); },
                  .input_shapes = {{2, 3, 4}, {2, 4}}});
}

TEST_CASE("Dot matches Keras's batch_dot", "[layers]") {
  const Tensor a = make({1, 2, 3, 4, 5, 6}, {2, 3}, DType::Float32), b = make({1, 0, -1, 2, 2, 2}, {2, 3}, DType::Float32);
  // keras.layers.Dot(axes=1)([a, b]) and with normalize=True (Keras 3.15).
  check_tensor(layers::Dot(1)({a, b}), DType::Float32, {2, 1}, {-2, 30});
  check_tensor(layers::Dot(1, {.normalize = true})({a, b}), DType::Float32, {2, 1},
               {-0.37796443700790405, 0.9869275689125061});
  // (batch, 2, 3) . (batch, 3): each row of x dotted with y -> (batch, 2).
  const Tensor m = make({1, 2, 3, 4, 5, 6, 1, 1, 1, 0, 0, 0}, {2, 2, 3}, DType::Float32);
  check_tensor(layers::Dot({2, 1})({m, b}), DType::Float32, {2, 2}, {-2, -2, 6, 0});
  // A contraction over a middle axis: x (1, 2, 3) on axis 1 with y (1, 2, 2) on axis 1 -> (1, 3, 2) = x^T y.
  const Tensor x = make({1, 2, 3, 4, 5, 6}, {1, 2, 3}, DType::Float32), y = make({1, 0, 0, 1}, {1, 2, 2}, DType::Float32);
  check_tensor(layers::Dot(1)({x, y}), DType::Float32, {1, 3, 2}, {1, 4, 2, 5, 3, 6});
  // Symbolic shapes follow Keras's compute_output_shape.
  CHECK(layers::Dot(-1)({layers::Input({3, 4}), layers::Input({5, 4})}).shape() == Shape{-1, 3, 5});
  CHECK(layers::Dot({1, 2})({layers::Input({3, 2}), layers::Input({4, 3, 2})}).shape() == Shape{-1, 2, 4, 2});
  // A zero vector normalises to zero (Keras clips the inverse norm at 1 / epsilon), not NaN.
  check_tensor(layers::Dot(1, {.normalize = true})({ops::zeros({1, 3}), make({1, 0, -1}, {1, 3}, DType::Float32)}),
               DType::Float32, {1, 1}, {0});
}

TEST_CASE("Dot checks its inputs and axes and reads Keras 3 configs", "[layers]") {
  CHECK_THROWS_AS(layers::Dot(0), InvalidArgument);
  CHECK_THROWS_AS(layers::Dot({1, 0}), InvalidArgument);
  try {
    layers::Dot(1)({ops::ones({2, 3}), ops::ones({2, 4})});
    FAIL("expected InvalidArgument");
  } catch (const InvalidArgument& e) {
    const std::string m = e.what();
    CHECK(m.find("Dot 'dot") != std::string::npos);
    CHECK(m.find("(None, 3)") != std::string::npos);  // checked at build, where the batch is unknown
    CHECK(m.find("(None, 4)") != std::string::npos);
    CHECK(m.find("axis 1 of the first has size 3 but axis 1 of the second has size 4") != std::string::npos);
  }
  CHECK_THROWS_AS(layers::Dot(1)({ops::ones({2, 3})}), InvalidArgument);                                       // one input
  CHECK_THROWS_AS(layers::Dot(1)({ops::ones({2, 3}), ops::ones({2, 3}), ops::ones({2, 3})}), InvalidArgument);  // three
  CHECK_THROWS_AS(layers::Dot(1)({ops::ones({2, 3}), ops::ones({3, 3})}), InvalidArgument);  // batch sizes
  CHECK_THROWS_AS(layers::Dot(3)({ops::ones({2, 3}), ops::ones({2, 3})}), InvalidArgument);  // out of range
  CHECK_THROWS_AS(layers::Dot(1)({ops::ones({2}), ops::ones({2})}), InvalidArgument);        // rank < 2
  layers::Dot built(1);
  built({ops::ones({2, 3}), ops::ones({2, 3})});
  CHECK_THROWS_AS(built({ops::ones({2, 3}), ops::ones({2, 5})}), InvalidArgument);

  backend::clear_session();
  CHECK(layers::Dot(1).name() == "dot");
  for (const char* text : {R"({"name": "dot", "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy",
           "config": {"name": "float32"}, "registered_name": null}, "axes": [1, 2], "normalize": true})",
                           R"({"name": "dot_1", "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy",
           "config": {"name": "float32"}, "registered_name": null}, "axes": 1, "normalize": false})"}) {
    const nlohmann::json keras = nlohmann::json::parse(text);  // written by Keras 3.15
    INFO(keras.dump());
    CHECK(deserialize_layer({{"class_name", "Dot"}, {"config", keras}})->get_config() == keras);
  }
  CHECK_THROWS_AS(deserialize_layer({{"class_name", "Dot"}, {"config", {{"name", "d"}}}}), InvalidArgument);
  CHECK_THROWS_AS(deserialize_layer({{"class_name", "Dot"}, {"config", {{"axes", {1, 2, 3}}}}}), InvalidArgument);
  CHECK_THROWS_AS(deserialize_layer({{"class_name", "Dot"}, {"config", {{"axes", {1}}}}}), InvalidArgument);
}
