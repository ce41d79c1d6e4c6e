#include <catch2/catch.hpp>

#include "framework/ember.h"
#include "tests/support/layer_testing.h"

using namespace ember;
using namespace ember::testing;

TEST_CASE("Dense conformance", "[layers]") {
  run_layer_test({.what = "Dense(3)",
                  .make = [] { return std::make_shared<layers::Dense>(3); },
                  .input_shapes = {{4, 5}},
                  .trainable_weights = 2,
                  .weight_shapes = {{5, 3}, {3}}});
  run_layer_test({.what = "Dense(2, relu, no bias) on rank 3",
                  .make = [] { return std::make_shared<layers::Dense>(2, layers::DenseOptions{.activation = "tanh", .use_bias = false}); },
                  .input_shapes = {{2, 3, 4}},
                  .trainable_weights = 1,
                  .weight_shapes = {{4, 2}}});
}

TEST_CASE("Dense computes x @ kernel + bias with Keras names and config", "[layers]") {
  backend::clear_session();
  layers::Dense d(2, {.activation = "relu"});
  CHECK(d.name() == "dense");
  layers::Dense d1(2);
  CHECK(d1.name() == "dense_1");
  Tensor x = make({1, 2, 3, -4, -5, -6}, {2, 3}, DType::Float32);
  Tensor y = d(x);
  REQUIRE(d.weights().size() == 2);
  CHECK(d.weights()[0].name() == "dense/kernel");
  CHECK(d.weights()[1].name() == "dense/bias");
  d.set_weights({make({1, 0, 0, 1, 1, 1}, {3, 2}, DType::Float32), make({0.5, -0.5}, {2}, DType::Float32)});
  check_tensor(d(x), DType::Float32, {2, 2}, {4.5, 4.5, 0, 0});
  CHECK_THROWS_AS(d(make({1, 2}, {1, 2}, DType::Float32)), InvalidArgument);
  CHECK_THROWS_AS(d.set_weights({make({1}, {1}, DType::Float32)}), InvalidArgument);
  nlohmann::json c = d.get_config();
  CHECK(c["units"] == 2);
  CHECK(c["activation"] == "relu");
  CHECK(c["kernel_initializer"]["class_name"] == "GlorotUniform");
  CHECK_THROWS_AS(layers::Dense(3, {.activation = "nope"}), InvalidArgument);
}
