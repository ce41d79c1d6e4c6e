// The activation layers LeakyReLU, PReLU and ELU, and Identity (Keras's layers/activations, layers/core).
#include <catch2/catch.hpp>

#include "framework/ember.h"
#include "tests/support/layer_testing.h"

using namespace ember;
using namespace ember::testing;

namespace {

const Tensor& kink_input() {
  static const Tensor x = make({-10, -5, 0, 1.5, 2.5}, {1, 5}, DType::Float32);
  return x;
}

}  // namespace

TEST_CASE("LeakyReLU conformance, values and config", "[layers]") {
  run_layer_test({.what = "LeakyReLU()",
                  .make = [] { return std::make_shared<layers::LeakyReLU>(); },
                  .input_shapes = {{3, 4}},
                  .check_bad_input_shape = false});
  run_layer_test({.what = "LeakyReLU(0.1) on rank 4",
                  .make = [] { return std::make_shared<layers::LeakyReLU>(layers::LeakyReLUOptions{.negative_slope = 0.1}); },
                  .input_shapes = {{2, 3, 2, 2}},
                  .check_bad_input_shape = false});
  // keras.layers.LeakyReLU(...)(x) (Keras 3.15): the default slope is 0.3 (tf-keras's alpha was 0.3 too).
  check_tensor(layers::LeakyReLU()(kink_input()), DType::Float32, {1, 5}, {-3, -1.5, 0, 1.5, 2.5});
  check_tensor(layers::LeakyReLU({.negative_slope = 0.1})(kink_input()), DType::Float32, {1, 5}, {-1, -0.5, 0, 1.5, 2.5});
  CHECK_THROWS_AS(layers::LeakyReLU({.negative_slope = -0.1}), InvalidArgument);

  backend::clear_session();
  layers::LeakyReLU l;
  CHECK(l.name() == "leaky_re_lu");
  CHECK(l.get_config()["negative_slope"] == 0.3);
  CHECK(l(ops::ones({2, 7, 5})).shape() == Shape{2, 7, 5});  // any shape after the first call
  // Keras 3's config, and tf-keras's "alpha" spelling.
  LayerPtr k3 = deserialize_layer(nlohmann::json::parse(R"({"class_name": "LeakyReLU", "config": {"name": "lr",
      "trainable": true, "dtype": "float32", "negative_slope": 0.2}})"));
  CHECK(k3->get_config()["negative_slope"] == 0.2);
  LayerPtr k2 = deserialize_layer(nlohmann::json::parse(
      R"({"class_name": "LeakyReLU", "config": {"name": "lr2", "trainable": true, "dtype": "float32", "alpha": 0.05}})"));
  CHECK(k2->get_config()["negative_slope"] == 0.05);
  CHECK_THROWS_AS(deserialize_layer(nlohmann::json::parse(
                      R"({"class_name": "LeakyReLU", "config": {"name": "lr3", "negative_slope": null}})")),
                  InvalidArgument);
}

TEST_CASE("ELU conformance, values and config", "[layers]") {
  run_layer_test({.what = "ELU()",
                  .make = [] { return std::make_shared<layers::ELU>(); },
                  .input_shapes = {{3, 4}},
                  .check_bad_input_shape = false});
  run_layer_test({.what = "ELU(alpha 0.5)",
                  .make = [] { return std::make_shared<layers::ELU>(layers::ELUOptions{.alpha = 0.5}); },
                  .input_shapes = {{2, 3, 4}},
                  .check_bad_input_shape = false});
  // keras.layers.ELU(...)(x) (Keras 3.15).
  check_tensor(layers::ELU()(kink_input()), DType::Float32, {1, 5},
               {-0.9999545812606812, -0.9932620525360107, 0, 1.5, 2.5});
  check_tensor(layers::ELU({.alpha = 0.5})(kink_input()), DType::Float32, {1, 5},
               {-0.4999772906303406, -0.49663102626800537, 0, 1.5, 2.5});
  backend::clear_session();
  layers::ELU e({.alpha = 0.5});
  CHECK(e.name() == "elu");
  CHECK(e.get_config()["alpha"] == 0.5);
  CHECK(deserialize_layer(serialize_layer(e))->get_config()["alpha"] == 0.5);
}

TEST_CASE("PReLU conformance", "[layers]") {
  run_layer_test({.what = "PReLU(random alpha)",
                  .make = [] {
                    return std::make_shared<layers::PReLU>(layers::PReLUOptions{.alpha_initializer = "random_uniform"});
                  },
                  .input_shapes = {{3, 4}},
                  .trainable_weights = 1,
                  .weight_shapes = {{4}}});
  run_layer_test({.what = "PReLU(shared_axes {1, 2}) on NHWC",
                  .make = [] {
                    return std::make_shared<layers::PReLU>(
                        layers::PReLUOptions{.alpha_initializer = "random_uniform", .shared_axes = {1, 2}});
                  },
                  .input_shapes = {{2, 3, 2, 4}},
                  .trainable_weights = 1,
                  .weight_shapes = {{1, 1, 4}}});
}

TEST_CASE("PReLU values, shared axes, input checks and config", "[layers]") {
  // keras.layers.PReLU(alpha_initializer=Constant(0.25))(x) (Keras 3.15).
  layers::PReLU p({.alpha_initializer = initializers::Constant(0.25)});
  check_tensor(p(kink_input()), DType::Float32, {1, 5}, {-2.5, -1.25, 0, 1.5, 2.5});
  // Keras's default alpha is zeros: a plain ReLU until trained.
  check_tensor(layers::PReLU()(kink_input()), DType::Float32, {1, 5}, {0, 0, 0, 1.5, 2.5});

  // One alpha per channel: alpha = (0.1, 0.2) applied along the last axis at every position.
  layers::PReLU shared({.shared_axes = {1}});
  Tensor x = make({-1, -1, -2, -2, -3, -3}, {1, 3, 2}, DType::Float32);
  shared(x);
  REQUIRE(shared.alpha().shape() == Shape{1, 2});
  shared.set_weights({make({0.1, 0.2}, {1, 2}, DType::Float32)});
  check_tensor(shared(x), DType::Float32, {1, 3, 2}, {-0.1, -0.2, -0.2, -0.4, -0.3, -0.6});
  CHECK(shared.alpha().name() == shared.name() + "/alpha");
  // A shared axis may change size; the others may not, nor the rank.
  CHECK(shared(ops::ones({2, 5, 2})).shape() == Shape{2, 5, 2});
  try {
    shared(ops::ones({2, 3, 3}));
    FAIL("expected InvalidArgument");
  } catch (const InvalidArgument& e) {
    const std::string m = e.what();
    CHECK(m.find("PReLU '" + shared.name() + "'") != std::string::npos);
    CHECK(m.find("(None, 3, 2)") != std::string::npos);  // what it was built for
    CHECK(m.find("(2, 3, 3)") != std::string::npos);     // what it got
  }
  CHECK_THROWS_AS(shared(ops::ones({2, 3})), InvalidArgument);
  CHECK_THROWS_AS(layers::PReLU({.shared_axes = {0}}), InvalidArgument);
  CHECK_THROWS_AS(layers::PReLU({.shared_axes = {3}})(ops::ones({2, 3})), InvalidArgument);

  // Keras 3's config; an alpha_constraint is not implemented and is refused rather than ignored.
  nlohmann::json keras = nlohmann::json::parse(R"({"class_name": "PReLU", "config": {"name": "p_re_lu", "trainable": true,
      "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": null},
      "alpha_initializer": {"module": "keras.initializers", "class_name": "Constant", "config": {"value": 0.25},
      "registered_name": null}, "alpha_regularizer": null, "alpha_constraint": null, "shared_axes": [1, 2]}})");
  LayerPtr l = deserialize_layer(keras);
  CHECK(l->get_config()["shared_axes"] == nlohmann::json({1, 2}));
  CHECK(l->get_config()["alpha_initializer"]["class_name"] == "Constant");
  CHECK(l->get_config()["alpha_constraint"].is_null());
  check_tensor((*l)(make({-4, 4}, {1, 1, 1, 2}, DType::Float32)), DType::Float32, {1, 1, 1, 2}, {-1, 4});
  keras["config"]["alpha_constraint"] = {{"class_name", "NonNeg"}, {"config", nlohmann::json::object()}};
  CHECK_THROWS_AS(deserialize_layer(keras), InvalidArgument);
  CHECK(layers::PReLU().get_config()["shared_axes"].is_null());

  // The alpha regularizer joins the layer's losses.
  layers::PReLU reg({.alpha_initializer = initializers::Constant(0.5), .alpha_regularizer = regularizers::L2(0.1)});
  reg(ops::ones({1, 4}));
  REQUIRE(reg.losses().size() == 1);
  CHECK(reg.losses()[0].item<float>() == Approx(0.1 * 4 * 0.25));
}

TEST_CASE("Identity conformance and config", "[layers]") {
  run_layer_test({.what = "Identity()",
                  .make = [] { return std::make_shared<layers::Identity>(); },
                  .input_shapes = {{3, 4}},
                  .check_bad_input_shape = false});
  backend::clear_session();
  layers::Identity id;
  CHECK(id.name() == "identity");
  Tensor x = make({1, 2, 3}, {1, 3}, DType::Float32);
  CHECK(values_as_double(id(x)) == values_as_double(x));
  CHECK(id(ops::ones({2, 2, 2})).shape() == Shape{2, 2, 2});
  LayerPtr l = deserialize_layer(nlohmann::json::parse(R"({"class_name": "Identity", "config": {"name": "skip",
      "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"},
      "registered_name": null}}})"));
  CHECK(l->name() == "skip");
  CHECK(l->class_name() == "Identity");
}
