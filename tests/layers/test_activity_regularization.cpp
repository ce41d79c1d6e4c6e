// ActivityRegularization (Keras: keras.layers.ActivityRegularization): the identity plus an activity loss that
// the model's training loss includes.
#include <catch2/catch.hpp>

#include "framework/ember.h"
#include "tests/support/layer_testing.h"

using namespace ember;
using namespace ember::testing;

TEST_CASE("ActivityRegularization conformance", "[layers]") {
  run_layer_test({.what = "ActivityRegularization(l1 0.1, l2 0.01)",
                  .make = [] {
                    return std::make_shared<layers::ActivityRegularization>(
                        layers::ActivityRegularizationOptions{.l1 = 0.1, .l2 = 0.01});
                  },
                  .input_shapes = {{3, 4}},
                  .check_bad_input_shape = false});
}

TEST_CASE("ActivityRegularization adds (l1 sum|y| + l2 sum y^2) / batch to the losses, as Keras 3", "[layers]") {
  layers::ActivityRegularization ar({.l1 = 0.1, .l2 = 0.01});
  const Tensor x = make({1, 2, 3, 4, 5, 6}, {2, 3}, DType::Float32);
  const Tensor y = ar(x);
  CHECK(values_as_double(y) == values_as_double(x));
  // Keras 3.15: ActivityRegularization(l1=0.1, l2=0.01)(x).losses == [1.505].
  REQUIRE(ar.losses().size() == 1);
  CHECK(ar.losses()[0].item<float>() == Approx(1.505).epsilon(1e-6));
  // Each outer call replaces the previous call's loss; inference adds it too (Keras adds it on every call).
  ar(x * 2.0, false);
  REQUIRE(ar.losses().size() == 1);
  CHECK(ar.losses()[0].item<float>() == Approx((0.1 * 42 + 0.01 * 364) / 2).epsilon(1e-6));
  // The defaults (0, 0) add a zero loss; an empty batch adds zero rather than NaN.
  layers::ActivityRegularization none;
  none(x);
  CHECK(none.losses().at(0).item<float>() == 0);
  ar(ops::zeros({0, 3}));
  CHECK(ar.losses().at(0).item<float>() == 0);

  // The loss is differentiable with respect to the activations: d/dx (0.1 |x| + 0.01 x^2) / 2.
  GradientTape tape;
  tape.watch(x);
  ar(x);
  const Tensor g = tape.gradient(ar.losses()[0], {x})[0];
  std::vector<double> expected;
  for (double v : values_as_double(x)) expected.push_back((0.1 + 0.02 * v) / 2);
  check_tensor(g, DType::Float32, {2, 3}, expected);

  CHECK_THROWS_AS(layers::ActivityRegularization({.l1 = -1}), InvalidArgument);
  CHECK_THROWS_AS(layers::ActivityRegularization({.l2 = std::nan("")}), InvalidArgument);
}

TEST_CASE("a model's loss includes ActivityRegularization's penalty", "[layers]") {
  backend::clear_session();
  Sequential model({layers::Input({3}),
                    layers::Dense(2, {.kernel_initializer = "ones", .bias_initializer = "zeros"}),
                    layers::ActivityRegularization({.l1 = 0.5})});
  model.compile({.optimizer = optimizers::SGD(), .loss = "mse"});
  const Tensor x = make({1, 0, 0, 0, 2, 0}, {2, 3}, DType::Float32);  // Dense outputs (1, 1) and (2, 2)
  const Tensor t = ops::zeros({2, 2});
  const Logs logs = model.test_on_batch(x, t);
  const double mse = (1 + 1 + 4 + 4) / 4.0, penalty = 0.5 * (1 + 1 + 2 + 2) / 2;
  CHECK(logs.at("loss") == Approx(mse + penalty).epsilon(1e-6));
  REQUIRE(model.losses().size() == 1);
}

TEST_CASE("ActivityRegularization reads and writes Keras 3 configs", "[layers]") {
  backend::clear_session();
  layers::ActivityRegularization ar({.l1 = 0.1});
  CHECK(ar.name() == "activity_regularization");
  // Written by Keras 3.15: l1 and l2, no activity_regularizer key.
  const nlohmann::json keras = nlohmann::json::parse(R"({"name": "activity_regularization", "trainable": true, "dtype":
      {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": null},
      "l1": 0.1, "l2": 0.0})");
  CHECK(ar.get_config() == keras);
  LayerPtr l = deserialize_layer({{"class_name", "ActivityRegularization"}, {"config", keras}});
  CHECK(l->get_config() == keras);
}
