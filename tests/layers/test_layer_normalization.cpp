#include <catch2/catch.hpp>

#include "framework/ember.h"
#include "tests/support/layer_testing.h"

using namespace ember;
using namespace ember::testing;

using layers::LayerNormalization;
using layers::LayerNormalizationOptions;

TEST_CASE("LayerNormalization conformance", "[layers]") {
  run_layer_test({.what = "LayerNormalization()",
                  .make = [] { return std::make_shared<LayerNormalization>(); },
                  .input_shapes = {{3, 5}},
                  .trainable_weights = 2,
                  .weight_shapes = {{5}, {5}}});
  run_layer_test({.what = "LayerNormalization(axis (1, 2)) on NHWC",
                  .make = [] { return std::make_shared<LayerNormalization>(LayerNormalizationOptions{.axis = {2, 1}}); },
                  .input_shapes = {{2, 3, 2, 2}},
                  .trainable_weights = 2,
                  .weight_shapes = {{3, 2}, {3, 2}},
                  .check_bad_input_shape = false});  // the channel axis is not normalised: it may change
  run_layer_test({.what = "LayerNormalization(no center, no scale)",
                  .make = [] {
                    return std::make_shared<LayerNormalization>(LayerNormalizationOptions{.center = false, .scale = false});
                  },
                  .input_shapes = {{2, 3, 4}}});
  run_layer_test({.what = "LayerNormalization(rms_scaling)",
                  .make = [] { return std::make_shared<LayerNormalization>(LayerNormalizationOptions{.rms_scaling = true}); },
                  .input_shapes = {{3, 4}},
                  .trainable_weights = 1,
                  .weight_shapes = {{4}}});
}

TEST_CASE("LayerNormalization values match Keras", "[layers]") {
  backend::clear_session();
  LayerNormalization ln;
  CHECK(ln.name() == "layer_normalization");
  // keras.layers.LayerNormalization()([[1, 2, 3], [2, 4, 6]]): (x - mean) / sqrt(var + 1e-3).
  check_tensor(ln(make({1, 2, 3, 2, 4, 6}, {2, 3}, DType::Float32)), DType::Float32, {2, 3},
               {-1.2238273620605469, 0.0, 1.2238273620605469, -1.2245153188705444, 0.0, 1.2245151996612549});
  REQUIRE(ln.weights().size() == 2);
  CHECK(ln.weights()[0].name() == "layer_normalization/gamma");
  CHECK(ln.weights()[1].name() == "layer_normalization/beta");
  ln.set_weights({make({1, 2, 3}, {3}, DType::Float32), make({0, 1, 0}, {3}, DType::Float32)});
  const double s = 1 / std::sqrt(2.0 / 3 + 1e-3);
  check_tensor(ln(make({1, 2, 3}, {1, 3}, DType::Float32)), DType::Float32, {1, 3}, {-s, 1, 3 * s});

  // keras.layers.LayerNormalization(axis=[1, 2])(arange(12).reshape(1, 2, 3, 2)).
  LayerNormalization ln2({.axis = {1, 2}});
  check_tensor(ln2(make(iota(12), {1, 2, 3, 2}, DType::Float32)), DType::Float32, {1, 2, 3, 2},
               {-1.463787317276001, -1.463787317276001, -0.8782724142074585, -0.8782723546028137, -0.292757511138916,
                -0.29275739192962646, 0.29275739192962646, 0.29275739192962646, 0.878272294998169, 0.8782724142074585,
                1.463787317276001, 1.4637871980667114});

  // rms_scaling (Keras's deprecated form): x * rsqrt(var + eps) * gamma, not centred.
  LayerNormalization rms({.rms_scaling = true});
  check_tensor(rms(make({1, 2, 3}, {1, 3}, DType::Float32)), DType::Float32, {1, 3}, {s, 2 * s, 3 * s});
}

TEST_CASE("LayerNormalization under mixed_float16 normalises in float32", "[layers]") {
  LayerNormalization ln({.dtype = "mixed_float16"});
  Tensor y = ln(make({1000, 1001, 1002, 1003}, {1, 4}, DType::Float32));
  CHECK(y.dtype() == DType::Float16);
  CHECK(ln.weights()[0].dtype() == DType::Float32);
  const double s = 1 / std::sqrt(1.25 + 1e-3);
  check_tensor(y, DType::Float16, {1, 4}, {-1.5 * s, -0.5 * s, 0.5 * s, 1.5 * s}, 2e-3, 1e-3);
}

TEST_CASE("LayerNormalization errors and Keras configs", "[layers]") {
  LayerNormalization ln;
  ln(ops::ones({2, 4}));
  CHECK_THROWS_AS(ln(ops::ones({2, 5})), InvalidArgument);
  CHECK_THROWS_AS(ln(ops::ones({2, 3, 4})), InvalidArgument);
  CHECK_THROWS_AS(LayerNormalization({.axis = {2}})(ops::ones({2, 3})), InvalidArgument);
  CHECK_THROWS_AS(LayerNormalization({.axis = {1, -1}})(ops::ones({2, 3})), InvalidArgument);  // the same axis twice

  nlohmann::json c = ln.get_config();
  CHECK(c["axis"] == -1);
  CHECK(c["epsilon"] == 0.001);
  CHECK(c["rms_scaling"] == false);
  for (const char* key : {"center", "scale", "beta_initializer", "gamma_initializer", "beta_regularizer",
                          "gamma_regularizer", "beta_constraint", "gamma_constraint"})
    CHECK(c.contains(key));
  CHECK(LayerNormalization({.axis = {2, 1}}).get_config()["axis"] == nlohmann::json({1, 2}));  // sorted, as Keras

  // Keras 3 writes the axis as a list once built.
  nlohmann::json keras = nlohmann::json::parse(R"({"class_name": "LayerNormalization", "config": {"name": "ln",
      "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"},
      "registered_name": null}, "axis": [-1], "epsilon": 0.001, "center": true, "scale": true, "rms_scaling": false,
      "beta_initializer": {"module": "keras.initializers", "class_name": "Zeros", "config": {}, "registered_name": null},
      "gamma_initializer": {"module": "keras.initializers", "class_name": "Ones", "config": {}, "registered_name": null},
      "beta_regularizer": null, "gamma_regularizer": null, "beta_constraint": null, "gamma_constraint": null}})");
  LayerPtr l = deserialize_layer(keras);
  CHECK(l->name() == "ln");
  CHECK(l->get_config()["axis"] == -1);
  CHECK((*l)(ops::ones({2, 3})).shape() == Shape{2, 3});
}
