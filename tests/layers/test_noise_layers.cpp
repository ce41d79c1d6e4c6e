// The noise layers GaussianNoise, GaussianDropout and SpatialDropout2D (Keras's layers/regularization): active
// only in training, seeded sequences, statistics and configs.
#include <catch2/catch.hpp>

#include <cmath>

#include "framework/ember.h"
#include "tests/support/layer_testing.h"

using namespace ember;
using namespace ember::testing;

namespace {

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

double stddev_of(const std::vector<double>& v) {
  const double m = mean_of(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size()));
}

// A layer's outputs over three training calls, after an inference call (which must not advance the sequence).
std::vector<std::vector<double>> training_sequence(Layer& l, const Tensor& x) {
  l(x, false);
  std::vector<std::vector<double>> out;
  for (int i = 0; i < 3; ++i) out.push_back(values_as_double(l(x, true)));
  return out;
}

// Tape gradient of sum(layer(x, training)) with respect to x, and the output.
std::pair<Tensor, Tensor> grad_and_output(Layer& l, const Tensor& x) {
  GradientTape tape;
  tape.watch(x);
  Tensor y = l(x, true);
  return {tape.gradient(ops::reduce_sum(y), {x})[0], y};
}

}  // namespace

TEST_CASE("noise layers conformance (inference: the identity)", "[layers]") {
  run_layer_test({.what = "GaussianNoise(0.5)",
                  .make = [] { return std::make_shared<layers::GaussianNoise>(0.5); },
                  .input_shapes = {{4, 5}},
                  .check_bad_input_shape = false});
  run_layer_test({.what = "GaussianDropout(0.3, seed)",
                  .make = [] { return std::make_shared<layers::GaussianDropout>(0.3, layers::GaussianDropoutOptions{.seed = 4}); },
                  .input_shapes = {{2, 3, 4}},
                  .check_bad_input_shape = false});
  run_layer_test({.what = "SpatialDropout2D(0.4)",
                  .make = [] { return std::make_shared<layers::SpatialDropout2D>(0.4); },
                  .input_shapes = {{2, 3, 3, 4}},
                  .check_bad_input_shape = false});
}

TEST_CASE("GaussianNoise adds Normal(0, stddev) noise only in training", "[layers]") {
  layers::GaussianNoise g(0.5, {.seed = 1});
  const Tensor x = ops::full({200, 250}, 3.0, DType::Float32);
  CHECK(values_as_double(g(x, false)) == values_as_double(x));
  std::vector<double> noise = values_as_double(g(x, true) - x);
  CHECK(std::abs(mean_of(noise)) < 0.01);  // 50000 draws: standard error 0.0022
  CHECK(std::abs(stddev_of(noise) - 0.5) < 0.01);
  CHECK(values_as_double(layers::GaussianNoise(0.0)(x, true)) == values_as_double(x));
  // The gradient with respect to the input is 1 (the noise is a constant).
  auto [grad, y] = grad_and_output(g, make(iota(6), {2, 3}, DType::Float32));
  check_tensor(grad, DType::Float32, {2, 3}, std::vector<double>(6, 1.0));
  // Under mixed_float16 the noise is drawn in the compute dtype, as Keras.
  layers::GaussianNoise half(0.5, {.seed = 2, .dtype = "mixed_float16"});
  CHECK(half(x, true).dtype() == DType::Float16);

  CHECK_THROWS_AS(layers::GaussianNoise(-0.1), InvalidArgument);
  CHECK_THROWS_AS(layers::GaussianNoise(1.5), InvalidArgument);
}

TEST_CASE("GaussianDropout multiplies by Normal(1, sqrt(rate / (1 - rate))) only in training", "[layers]") {
  layers::GaussianDropout g(0.2, {.seed = 3});
  const Tensor x = ops::full({200, 250}, 2.0, DType::Float32);
  CHECK(values_as_double(g(x, false)) == values_as_double(x));
  std::vector<double> factor = values_as_double(g(x, true) / 2.0);
  CHECK(std::abs(mean_of(factor) - 1.0) < 0.01);
  CHECK(std::abs(stddev_of(factor) - std::sqrt(0.2 / 0.8)) < 0.01);
  CHECK(values_as_double(layers::GaussianDropout(0.0)(x, true)) == values_as_double(x));
  // The gradient with respect to the input is the noise factor: y / x.
  const Tensor ones = ops::ones({3, 4});
  auto [grad, y] = grad_and_output(g, ones);
  CHECK(values_as_double(grad) == values_as_double(y));

  CHECK_THROWS_AS(layers::GaussianDropout(-0.1), InvalidArgument);
  CHECK_THROWS_AS(layers::GaussianDropout(1.0), InvalidArgument);
}

TEST_CASE("SpatialDropout2D drops whole channels of a sample, only in training", "[layers]") {
  layers::SpatialDropout2D d(0.5, {.seed = 7});
  const Tensor x = ops::ones({40, 3, 2, 25});
  CHECK(values_as_double(d(x, false)) == values_as_double(x));
  const std::vector<double> y = values_as_double(d(x, true));
  int dropped = 0;
  for (int b = 0; b < 40; ++b) {
    for (int c = 0; c < 25; ++c) {
      const double first = y[(b * 6) * 25 + c];
      CHECK((first == 0 || first == 2.0));  // kept values are scaled by 1 / (1 - rate)
      for (int p = 1; p < 6; ++p) CHECK(y[(b * 6 + p) * 25 + c] == first);  // the same at every position
      dropped += first == 0;
    }
  }
  CHECK(std::abs(dropped / 1000.0 - 0.5) < 0.06);  // 1000 (sample, channel) pairs: standard error 0.016
  // The gradient is the mask scaled, like Dropout's.
  auto [grad, out] = grad_and_output(d, ops::ones({2, 2, 2, 3}));
  CHECK(values_as_double(grad) == values_as_double(out));

  CHECK_THROWS_AS(layers::SpatialDropout2D(1.0), InvalidArgument);
  CHECK_THROWS_AS(layers::SpatialDropout2D(0.5, {.data_format = "channels_first"}), InvalidArgument);
  try {
    d(ops::ones({2, 3, 4}), true);
    FAIL("expected InvalidArgument");
  } catch (const InvalidArgument& e) {
    const std::string m = e.what();
    CHECK(m.find("SpatialDropout2D '" + d.name() + "'") != std::string::npos);
    CHECK(m.find("rank-4") != std::string::npos);
    CHECK(m.find("(2, 3, 4)") != std::string::npos);
  }
  CHECK_THROWS_AS(layers::SpatialDropout2D(0.5)(layers::Input({3, 4})), InvalidArgument);
}

TEST_CASE("seeded noise layers repeat their sequence; inference calls do not advance it", "[layers]") {
  const Tensor x = make(iota(48, 1), {2, 2, 3, 4}, DType::Float32);
  auto check = [&](const std::function<LayerPtr(uint64_t)>& make_layer, const char* what) {
    INFO(what);
    LayerPtr a = make_layer(42), b = make_layer(42), c = make_layer(43);
    std::vector<std::vector<double>> seq_a = training_sequence(*a, x);
    random::uniform({100});  // other random ops in between change nothing
    std::vector<std::vector<double>> seq_b = training_sequence(*b, x);
    CHECK(seq_a == seq_b);
    CHECK(seq_a[0] != seq_a[1]);  // each call draws fresh noise
    CHECK(seq_a[1] != seq_a[2]);
    CHECK(values_as_double((*c)(x, true)) != seq_a[0]);
    // Unseeded layers follow the global seed.
    LayerPtr u1 = make_layer(0), u2 = make_layer(0);
    random::set_seed(5);
    std::vector<double> first = values_as_double((*u1)(x, true));
    random::set_seed(5);
    CHECK(values_as_double((*u2)(x, true)) == first);
  };
  check([](uint64_t s) -> LayerPtr {
    return std::make_shared<layers::GaussianNoise>(0.3, layers::GaussianNoiseOptions{.seed = s ? std::optional<uint64_t>(s) : std::nullopt});
  }, "GaussianNoise");
  check([](uint64_t s) -> LayerPtr {
    return std::make_shared<layers::GaussianDropout>(0.3, layers::GaussianDropoutOptions{.seed = s ? std::optional<uint64_t>(s) : std::nullopt});
  }, "GaussianDropout");
  check([](uint64_t s) -> LayerPtr {
    return std::make_shared<layers::SpatialDropout2D>(0.5, layers::SpatialDropout2DOptions{.seed = s ? std::optional<uint64_t>(s) : std::nullopt});
  }, "SpatialDropout2D");
}

TEST_CASE("noise layers read and write Keras 3 configs", "[layers]") {
  backend::clear_session();
  CHECK(layers::GaussianNoise(0.1).name() == "gaussian_noise");
  CHECK(layers::GaussianDropout(0.1).name() == "gaussian_dropout");
  CHECK(layers::SpatialDropout2D(0.1).name() == "spatial_dropout2d");

  // Written by Keras 3.15 (keras.layers.serialize(...)["config"]).
  const nlohmann::json noise = nlohmann::json::parse(R"({"name": "gaussian_noise", "trainable": true, "dtype": {"module":
      "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": null}, "stddev": 0.1,
      "seed": null})");
  const nlohmann::json gdrop = nlohmann::json::parse(R"({"name": "gaussian_dropout", "trainable": true, "dtype": {"module":
      "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": null}, "rate": 0.1,
      "seed": 12})");
  const nlohmann::json spatial = nlohmann::json::parse(
      R"({"rate": 0.2, "seed": 3, "name": "spatial_dropout2d", "dtype": "float32", "data_format": "channels_last"})");
  for (const auto& [cls, config] : {std::pair{"GaussianNoise", noise}, std::pair{"GaussianDropout", gdrop},
                                    std::pair{"SpatialDropout2D", spatial}}) {
    INFO(cls);
    LayerPtr l = deserialize_layer({{"class_name", cls}, {"config", config}});
    CHECK(l->class_name() == cls);
    CHECK(l->get_config() == config);  // the same keys and values as Keras's
  }
  // A mixed policy survives (Keras itself writes the variable dtype for SpatialDropout2D).
  LayerPtr half = deserialize_layer(serialize_layer(layers::SpatialDropout2D(0.2, {.dtype = "mixed_float16"})));
  CHECK(half->dtype_policy().name() == "mixed_float16");
  CHECK_THROWS_AS(deserialize_layer({{"class_name", "GaussianNoise"}, {"config", {{"seed", 1}}}}), InvalidArgument);
  CHECK_THROWS_AS(deserialize_layer({{"class_name", "GaussianDropout"}, {"config", {{"rate", 0.5}, {"seed", -1}}}}),
                  InvalidArgument);
}
