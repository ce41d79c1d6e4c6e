// TimeDistributed: the wrapped layer on every time step with one set of weights, Keras's names and config,
// save/load, masks passed through, and float64 gradients. Keras's numbers are checked by test_keras_parity.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "framework/ember.h"
#include "tests/support/layer_testing.h"
#include "tests/support/temp_dir.h"

using namespace ember;
using namespace ember::testing;

namespace {

}  // namespace

TEST_CASE("TimeDistributed passes the layer conformance check", "[layers][time_distributed]") {
  run_layer_test({.what = "TimeDistributed(Dense(3))",
                  .make = [] { return std::make_shared<layers::TimeDistributed>(layers::Dense(3)); },
                  .input_shapes = {{2, 4, 5}}, .trainable_weights = 2, .weight_shapes = {{5, 3}, {3}}});
  run_layer_test({.what = "TimeDistributed(Conv1D(2, 2))",
                  .make = [] { return std::make_shared<layers::TimeDistributed>(layers::Conv1D(2, 2)); },
                  .input_shapes = {{2, 3, 4, 2}}, .trainable_weights = 2});
}

TEST_CASE("TimeDistributed applies one layer to every step", "[layers][time_distributed]") {
  backend::clear_session();
  layers::TimeDistributed td(layers::Dense(3, {.activation = "tanh"}));
  Tensor x = make(uniform_in(2 * 4 * 5, -1, 1, 1), {2, 4, 5}, DType::Float32);
  Tensor y = td(x);
  CHECK(y.shape() == Shape{2, 4, 3});
  CHECK(td.compute_output_shape(Shape{-1, 4, 5}) == Shape{-1, 4, 3});
  // Dense on a rank-3 input is the same map on every step.
  CHECK(max_abs_diff(y, (*td.layer())(x)) < 1e-6);
  std::vector<std::string> names;
  for (const Variable& v : td.weights()) names.push_back(v.name());
  CHECK(names == std::vector<std::string>{"time_distributed/dense/kernel", "time_distributed/dense/bias"});
  CHECK_THROWS_AS(td(make(uniform_in(8, -1, 1, 2), {2, 4}, DType::Float32)), InvalidArgument);
  CHECK_THROWS_AS(td(make(uniform_in(2 * 4 * 6, -1, 1, 2), {2, 4, 6}, DType::Float32)), InvalidArgument);
}

TEST_CASE("TimeDistributed writes Keras's config, reads it back and saves in every format", "[layers][time_distributed]") {
  backend::clear_session();
  layers::TimeDistributed td(layers::Dense(2));
  nlohmann::json c = td.get_config();
  CHECK(c["name"] == "time_distributed");
  CHECK(c["layer"]["class_name"] == "Dense");
  CHECK(c["layer"]["config"]["units"] == 2);
  auto back = std::dynamic_pointer_cast<layers::TimeDistributed>(deserialize_layer(serialize_layer(td)));
  REQUIRE(back);
  CHECK(back->get_config() == c);
  CHECK_THROWS_AS(deserialize_layer({{"class_name", "TimeDistributed"}, {"config", {{"name", "t"}}}}), InvalidArgument);

  Sequential model({layers::Input({3, 4}), layers::TimeDistributed(layers::Dense(5, {.activation = "relu"})),
                    layers::TimeDistributed(layers::Dense(1))});
  Tensor x = make(uniform_in(2 * 3 * 4, -1, 1, 3), {2, 3, 4}, DType::Float32);
  const Tensor y = model(x);
  TempDir dir("time_distributed");
  for (const std::string file : {"m.keras", "m.h5"}) {
    INFO(file);
    model.save(dir.file(file));
    CHECK(max_abs_diff(models::load_model(dir.file(file))(x), y) < 1e-6);
  }
  for (const std::string file : {"w.weights.h5", "w.h5"}) {
    INFO(file);
    model.save_weights(dir.file(file));
    auto fresh = models::clone_model(model);
    fresh->load_weights(dir.file(file));
    CHECK(max_abs_diff((*fresh)(x), y) < 1e-6);
  }
}

TEST_CASE("TimeDistributed passes the mask through, and on to a recurrent layer", "[layers][time_distributed]") {
  Tensor x = make(uniform_in(2 * 3 * 4, -1, 1, 4), {2, 3, 4}, DType::Float32);
  Tensor mask = Tensor::from_vector<bool>({true, true, false, true, false, false}, Shape{2, 3});
  backend::set_keras_mask(x, mask);
  layers::TimeDistributed td(layers::Dense(2));
  Tensor y = td(x);
  REQUIRE(backend::get_keras_mask(y).defined());
  CHECK(backend::get_keras_mask(y).to_vector<bool>() == mask.to_vector<bool>());
  // Masked: the LSTM after it sees sample 0's first two steps only.
  layers::LSTM lstm(3);
  Tensor h = lstm(y);
  Tensor x0 = ops::slice(x, {0, 0, 0}, {1, 2, 4});
  CHECK(max_abs_diff(ops::slice(h, {0, 0}, {1, 3}), lstm(td(x0))) < 1e-6);

  // Float64 gradients.
  layers::TimeDistributed td64(layers::Dense(2, {.activation = "tanh", .dtype = "float64"}), {.dtype = "float64"});
  Tensor x64 = rand64({2, 3, 4}, 5);
  td64(x64);
  check_gradients("TimeDistributed(Dense) inputs", [&](const std::vector<Tensor>& xs) { return td64(xs[0]); }, {x64},
                  {.h = 1e-6, .rtol = 1e-5, .atol = 1e-7});
  LayerTestSpec spec{.what = "TimeDistributed(Dense) weights"};
  spec.grad = {.h = 1e-6, .rtol = 1e-5, .atol = 1e-7, .seed = 9};
  detail_layer_test::check_weight_gradients(spec, td64, {x64});
}
