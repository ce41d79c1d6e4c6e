// Lambda (Keras: keras.layers.Lambda): a C++ function as a layer, which cannot be saved with a model's
// architecture.
#include <catch2/catch.hpp>

#include "framework/ember.h"
#include "tests/support/layer_testing.h"
#include "tests/support/temp_dir.h"

using namespace ember;
using namespace ember::testing;

namespace {

Tensor square_plus_sin(const Tensor& x) { return ops::square(x) + ops::sin(x); }

}  // namespace

TEST_CASE("Lambda conformance (without the config round trip: it cannot be serialized)", "[layers]") {
  run_layer_test({.what = "Lambda(x^2 + sin x)",
                  .make = [] { return std::make_shared<layers::Lambda>(layers::Lambda::Function(square_plus_sin)); },
                  .input_shapes = {{3, 4}},
                  .check_bad_input_shape = false,
                  .check_config = false});
  run_layer_test({.what = "Lambda(concat of a list, reshaped)",
                  .make = [] {
                    return std::make_shared<layers::Lambda>(layers::Lambda::ListFunction([](const std::vector<Tensor>& xs) {
                      return ops::reshape(ops::concat(xs, -1), {xs[0].shape()[0], -1});
                    }));
                  },
                  .input_shapes = {{2, 3, 2}, {2, 3, 1}},
                  .check_bad_input_shape = false,
                  .check_config = false});
}

TEST_CASE("Lambda runs its function, in models too, and gives output shapes", "[layers]") {
  backend::clear_session();
  layers::Lambda twice([](const Tensor& x) { return x * 2.0; });
  CHECK(twice.name() == "lambda");
  check_tensor(twice(make({1, 2, 3}, {1, 3}, DType::Float32)), DType::Float32, {1, 3}, {2, 4, 6});
  CHECK(twice(ops::ones({2, 2, 2})).shape() == Shape{2, 2, 2});  // no input spec

  // The output shape comes from calling the function, or from output_shape.
  Tensor in = layers::Input({6});
  Tensor h = layers::Lambda([](const Tensor& x) { return ops::reshape(x, {x.shape()[0], 2, 3}); })(in);
  CHECK(h.shape() == Shape{-1, 2, 3});
  Tensor k = layers::Lambda([](const Tensor& x) { return ops::reduce_sum(x, {1, 2}, true); },
                            {.output_shape = Shape{1, 1}})(h);
  CHECK(k.shape() == Shape{-1, 1, 1});
  Model model(in, k);
  const Tensor x = make({1, 2, 3, 4, 5, 6, 0, 0, 0, 0, 0, 1}, {2, 6}, DType::Float32);
  check_tensor(model.predict(x, {.verbose = 0}), DType::Float32, {2, 1, 1}, {21, 1});

  // A list function takes a list.
  layers::Lambda add_all([](const std::vector<Tensor>& xs) { return xs[0] + xs[1]; });
  check_tensor(add_all({make({1, 2}, {1, 2}, DType::Float32), make({3, 4}, {1, 2}, DType::Float32)}), DType::Float32,
               {1, 2}, {4, 6});
  Tensor sum = layers::Lambda([](const std::vector<Tensor>& xs) { return xs[0] + xs[1]; })(
      {layers::Input({2}), layers::Input({2})});
  CHECK(sum.shape() == Shape{-1, 2});
  try {
    twice({ops::ones({1, 2}), ops::ones({1, 2})});
    FAIL("expected InvalidArgument");
  } catch (const InvalidArgument& e) {
    CHECK(std::string(e.what()).find("Lambda 'lambda'") != std::string::npos);
  }
  CHECK_THROWS_AS(layers::Lambda(layers::Lambda::Function{}), InvalidArgument);

  // Trains like any layer: the gradient flows through the function to the Dense below it.
  Sequential seq({layers::Input({3}), layers::Dense(2), layers::Lambda([](const Tensor& x) { return ops::tanh(x); })});
  seq.compile({.optimizer = optimizers::SGD({.learning_rate = 0.5}), .loss = "mse"});
  const Tensor xs = random::normal({16, 3}, {.seed = 1}), ys = ops::full({16, 2}, 0.5, DType::Float32);
  const double before = seq.evaluate(xs, ys, {.verbose = 0}).at("loss");
  for (int i = 0; i < 5; ++i) seq.train_on_batch(xs, ys);
  CHECK(seq.evaluate(xs, ys, {.verbose = 0}).at("loss") < before);
}

TEST_CASE("a model with a Lambda cannot be saved or loaded with its architecture, but its weights can", "[layers]") {
  TempDir dir("lambda_save");
  backend::clear_session();
  auto build = [] {
    return Sequential({layers::Input({3}), layers::Dense(2, {.name = "d"}),
                       layers::Lambda([](const Tensor& x) { return x * 3.0; }, {.name = "times_three"})});
  };
  Sequential model = build();
  for (const char* file : {"m.keras", "m.h5"}) {
    INFO(file);
    try {
      model.save(dir.file(file));
      FAIL("expected Unimplemented");
    } catch (const Unimplemented& e) {
      const std::string m = e.what();
      CHECK(m.find("Lambda 'times_three'") != std::string::npos);
      CHECK(m.find("save_weights") != std::string::npos);
    }
  }
  CHECK_THROWS_AS(model.to_json(), Unimplemented);
  CHECK_THROWS_AS(layers::Lambda([](const Tensor& x) { return x; }).get_config(), Unimplemented);

  // save_weights and load_weights need no config.
  Sequential twin = build();
  const std::string weights = dir.file("m.weights.h5");
  model.save_weights(weights);
  twin.load_weights(weights);
  const Tensor x = random::normal({2, 3}, {.seed = 3});
  CHECK(values_as_double(twin.predict(x, {.verbose = 0})) == values_as_double(model.predict(x, {.verbose = 0})));

  // Keras's own config for a Lambda holds Python bytecode: loading it is refused with a clear error.
  const nlohmann::json keras = nlohmann::json::parse(R"({"class_name": "Lambda", "config": {"name": "lambda", "trainable":
      true, "dtype": "float32", "function": {"class_name": "__lambda__", "config": {"code": "4wEAAAAA", "defaults": null,
      "closure": null}}, "arguments": {}}})");
  try {
    deserialize_layer(keras);
    FAIL("expected InvalidArgument");
  } catch (const InvalidArgument& e) {
    const std::string m = e.what();
    CHECK(m.find("Lambda 'lambda'") != std::string::npos);
    CHECK(m.find("load_weights") != std::string::npos);
  }
}
