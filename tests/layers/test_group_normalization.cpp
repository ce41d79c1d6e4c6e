// GroupNormalization (Keras: keras.layers.GroupNormalization).
#include <catch2/catch.hpp>

#include <cmath>

#include "framework/ember.h"
#include "tests/support/layer_testing.h"

using namespace ember;
using namespace ember::testing;

namespace {

layers::GroupNormalizationOptions random_affine(layers::GroupNormalizationOptions o) {
  o.beta_initializer = "random_normal";
  o.gamma_initializer = "random_uniform";
  return o;
}

}  // namespace

TEST_CASE("GroupNormalization conformance", "[layers]") {
  run_layer_test({.what = "GroupNormalization(groups 2) on rank 3",
                  .make = [] { return std::make_shared<layers::GroupNormalization>(random_affine({.groups = 2})); },
                  .input_shapes = {{2, 3, 4}},
                  .trainable_weights = 2,
                  .weight_shapes = {{4}, {4}},
                  .grad = {.h = 1e-6, .rtol = 1e-5, .atol = 1e-5, .seed = 1234}});
  run_layer_test({.what = "GroupNormalization(groups -1: instance norm) on NHWC",
                  .make = [] { return std::make_shared<layers::GroupNormalization>(random_affine({.groups = -1})); },
                  .input_shapes = {{2, 3, 2, 4}},
                  .trainable_weights = 2,
                  .weight_shapes = {{4}, {4}},
                  .grad = {.h = 1e-6, .rtol = 1e-5, .atol = 1e-5, .seed = 1234}});
  run_layer_test({.what = "GroupNormalization(groups 3, axis 1, no center)",
                  .make = [] {
                    return std::make_shared<layers::GroupNormalization>(
                        random_affine({.groups = 3, .axis = 1, .center = false}));
                  },
                  .input_shapes = {{2, 6, 5}},
                  .trainable_weights = 1,
                  .weight_shapes = {{6}},
                  .check_bad_input_shape = false,  // the last axis is not the channel axis here
                  .grad = {.h = 1e-6, .rtol = 1e-5, .atol = 1e-5, .seed = 1234}});
}

TEST_CASE("GroupNormalization matches Keras's values", "[layers]") {
  // keras.layers.GroupNormalization(groups=2)(x), x = arange(12).reshape(1, 3, 4) ** 1.5 (Keras 3.15).
  std::vector<double> x;
  for (int i = 0; i < 12; ++i) x.push_back(std::pow(static_cast<double>(i), 1.5));
  layers::GroupNormalization gn({.groups = 2});
  check_tensor(gn(make(x, {1, 3, 4}, DType::Float32)), DType::Float32, {1, 3, 4},
               {-1.1456350088119507, -1.0471669435501099, -1.2351900339126587, -1.045233964920044,
                -0.3578929901123047, -0.044732000678777695, -0.2830120027065277, 0.023722000420093536,
                1.0824350118637085, 1.5129929780960083, 1.074902057647705, 1.4648139476776123},
               1e-5, 1e-5);
  CHECK(gn.gamma().name() == gn.name() + "/gamma");
  CHECK(gn.beta().name() == gn.name() + "/beta");

  // groups 1 over all axes is layer normalization over (time, channels); groups = channels normalises each
  // channel on its own.
  const Tensor in = make(uniform_values(2 * 3 * 4, 3), {2, 3, 4}, DType::Float32);
  layers::LayerNormalization ln({.axis = {1, 2}});
  check_tensor(layers::GroupNormalization({.groups = 1})(in), DType::Float32, {2, 3, 4}, values_as_double(ln(in)),
               1e-5, 1e-5);
  const std::vector<double> inst = values_as_double(layers::GroupNormalization({.groups = 4})(in));
  for (int b = 0; b < 2; ++b) {
    for (int c = 0; c < 4; ++c) {
      double mean = 0;
      for (int t = 0; t < 3; ++t) mean += inst[(b * 3 + t) * 4 + c];
      CHECK(std::abs(mean) < 1e-5);
    }
  }
}

TEST_CASE("GroupNormalization under mixed precision computes in float32", "[layers]") {
  const Tensor in = make(uniform_values(2 * 3 * 4, 5), {2, 3, 4}, DType::Float32);
  layers::GroupNormalization full({.groups = 2}), half({.groups = 2, .dtype = "mixed_float16"});
  Tensor y = half(in);
  CHECK(y.dtype() == DType::Float16);
  CHECK(half.gamma().dtype() == DType::Float32);
  check_tensor(ops::cast(y, DType::Float32), DType::Float32, {2, 3, 4}, values_as_double(full(in)), 2e-3, 2e-3);
}

TEST_CASE("GroupNormalization checks groups, axes and inputs", "[layers]") {
  CHECK_THROWS_AS(layers::GroupNormalization({.groups = 0}), InvalidArgument);
  CHECK_THROWS_AS(layers::GroupNormalization({.groups = -2}), InvalidArgument);
  try {
    layers::GroupNormalization({.groups = 3})(ops::ones({2, 4}));
    FAIL("expected InvalidArgument");
  } catch (const InvalidArgument& e) {
    const std::string m = e.what();
    CHECK(m.find("GroupNormalization '") != std::string::npos);
    CHECK(m.find("multiple of groups (3)") != std::string::npos);
    CHECK(m.find("(None, 4)") != std::string::npos);  // built for the shape with an unknown batch
  }
  CHECK_THROWS_AS(layers::GroupNormalization({.groups = 8})(ops::ones({2, 4})), InvalidArgument);  // more groups than channels
  CHECK_THROWS_AS(layers::GroupNormalization({.groups = 1, .axis = 0})(ops::ones({2, 4})), InvalidArgument);
  CHECK_THROWS_AS(layers::GroupNormalization({.groups = 1, .axis = 3})(ops::ones({2, 4})), InvalidArgument);
  layers::GroupNormalization gn({.groups = 2});
  gn(ops::ones({2, 3, 4}));
  CHECK(gn(ops::ones({5, 7, 4})).shape() == Shape{5, 7, 4});  // other axes may change
  try {
    gn(ops::ones({2, 3, 6}));
    FAIL("expected InvalidArgument");
  } catch (const InvalidArgument& e) {
    const std::string m = e.what();
    CHECK(m.find("GroupNormalization '" + gn.name() + "'") != std::string::npos);
    CHECK(m.find("4 channels") != std::string::npos);
    CHECK(m.find("(2, 3, 6)") != std::string::npos);
  }
  CHECK_THROWS_AS(gn(ops::ones({2, 4})), InvalidArgument);
}

TEST_CASE("GroupNormalization reads and writes Keras 3 configs", "[layers]") {
  backend::clear_session();
  // Written by Keras 3.15 for GroupNormalization(groups=2).
  const nlohmann::json keras = nlohmann::json::parse(R"({"name": "group_normalization", "trainable": true, "dtype":
      {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": null},
      "groups": 2, "axis": -1, "epsilon": 0.001, "center": true, "scale": true,
      "beta_initializer": {"module": "keras.initializers", "class_name": "Zeros", "config": {}, "registered_name": null},
      "gamma_initializer": {"module": "keras.initializers", "class_name": "Ones", "config": {}, "registered_name": null},
      "beta_regularizer": null, "gamma_regularizer": null, "beta_constraint": null, "gamma_constraint": null})");
  LayerPtr l = deserialize_layer({{"class_name", "GroupNormalization"}, {"config", keras}});
  nlohmann::json mine = l->get_config();
  CHECK(mine.size() == keras.size());
  for (const auto& [key, value] : keras.items()) {
    INFO(key);
    REQUIRE(mine.contains(key));
    if (value.is_object()) {
      CHECK(mine[key]["class_name"] == value["class_name"]);  // Ember writes the Keras 2 object form here
    } else {
      CHECK(mine[key] == value);
    }
  }
  CHECK(layers::GroupNormalization().name() == "group_normalization");
  CHECK(layers::GroupNormalization().get_config()["groups"] == 32);
  // groups = -1 becomes the channel count at build, as in Keras.
  layers::GroupNormalization inst({.groups = -1});
  CHECK(inst.get_config()["groups"] == -1);
  inst(ops::ones({1, 2, 6}));
  CHECK(inst.get_config()["groups"] == 6);
  nlohmann::json constrained = keras;
  constrained["gamma_constraint"] = {{"class_name", "NonNeg"}, {"config", nlohmann::json::object()}};
  CHECK_THROWS_AS(deserialize_layer({{"class_name", "GroupNormalization"}, {"config", constrained}}), InvalidArgument);
}
