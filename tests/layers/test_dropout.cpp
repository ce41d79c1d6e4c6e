#include <catch2/catch.hpp>

#include "framework/ember.h"
#include "tests/support/layer_testing.h"

using namespace ember;
using namespace ember::testing;

namespace {

// Fraction of non-zero entries and the set of distinct non-zero values.
std::pair<double, std::vector<double>> kept(const Tensor& y) {
  std::vector<double> v = values_as_double(y), distinct;
  int64_t n = 0;
  for (double x : v) {
    if (x == 0) continue;
    ++n;
    if (std::find(distinct.begin(), distinct.end(), x) == distinct.end()) distinct.push_back(x);
  }
  return {static_cast<double>(n) / static_cast<double>(v.size()), distinct};
}

}  // namespace

TEST_CASE("Dropout conformance (inference)", "[layers]") {
  run_layer_test({.what = "Dropout(0.5)",
                  .make = [] { return std::make_shared<layers::Dropout>(0.5); },
                  .input_shapes = {{4, 5}},
                  .check_bad_input_shape = false});
  run_layer_test({.what = "Dropout(0.3, noise_shape, seed) on rank 3",
                  .make = [] {
                    return std::make_shared<layers::Dropout>(
                        0.3, layers::DropoutOptions{.noise_shape = std::vector<int64_t>{-1, 1, 3}, .seed = 5});
                  },
                  .input_shapes = {{2, 4, 3}},
                  .check_bad_input_shape = false});
}

TEST_CASE("Dropout keeps 1 - rate of the inputs, scaled by 1 / (1 - rate), only when training", "[layers]") {
  layers::Dropout d(0.3, {.seed = 1});
  Tensor x = ops::ones({200, 500});
  auto [fraction, values] = kept(d(x, true));
  CHECK(std::abs(fraction - 0.7) < 0.005);  // 100000 draws: the standard error is 0.0015
  REQUIRE(values.size() == 1);
  CHECK(values[0] == Approx(1 / 0.7).epsilon(1e-6));

  // Inference is the identity, and so is rate 0 in training.
  Tensor y = d(x, false);
  CHECK(values_as_double(y) == values_as_double(x));
  layers::Dropout zero(0.0);
  CHECK(values_as_double(zero(x, true)) == values_as_double(x));
  // A frozen layer still drops in training (trainable only concerns weights, as in Keras).
  layers::Dropout frozen(0.5, {.seed = 3, .trainable = false});
  CHECK(kept(frozen(x, true)).first < 0.6);

  // Unseeded layers draw from the global sequence.
  layers::Dropout unseeded(0.5);
  CHECK(std::abs(kept(unseeded(x, true)).first - 0.5) < 0.01);
}

TEST_CASE("A seeded Dropout gives a reproducible sequence of masks", "[layers]") {
  Tensor x = make(iota(64, 1), {8, 8}, DType::Float32);
  layers::Dropout a(0.5, {.seed = 42}), b(0.5, {.seed = 42}), c(0.5, {.seed = 43});
  std::vector<std::vector<double>> seq_a, seq_b;
  for (int i = 0; i < 3; ++i) seq_a.push_back(values_as_double(a(x, true)));
  random::uniform({100});  // other random ops in between change nothing
  for (int i = 0; i < 3; ++i) seq_b.push_back(values_as_double(b(x, true)));
  CHECK(seq_a == seq_b);
  CHECK(seq_a[0] != seq_a[1]);  // each call draws a fresh mask
  CHECK(seq_a[1] != seq_a[2]);
  CHECK(values_as_double(c(x, true)) != seq_a[0]);  // another seed, other masks
  // Inference calls do not advance the sequence.
  layers::Dropout d(0.5, {.seed = 42});
  d(x, false);
  CHECK(values_as_double(d(x, true)) == seq_a[0]);
}

TEST_CASE("Dropout noise_shape broadcasts one mask value", "[layers]") {
  layers::Dropout d(0.5, {.noise_shape = std::vector<int64_t>{-1, 1}, .seed = 7});
  Tensor y = d(ops::ones({64, 6}), true);
  std::vector<double> v = values_as_double(y);
  int dropped_rows = 0;
  for (int r = 0; r < 64; ++r) {
    for (int c = 1; c < 6; ++c) CHECK(v[r * 6 + c] == v[r * 6]);  // whole rows kept or dropped
    dropped_rows += v[r * 6] == 0;
  }
  CHECK(dropped_rows > 10);
  CHECK(dropped_rows < 54);
  CHECK_THROWS_AS(d(ops::ones({4, 6, 2}), true), InvalidArgument);   // noise_shape rank 2 vs input rank 3
  layers::Dropout bad(0.5, {.noise_shape = std::vector<int64_t>{4, 3}});
  CHECK_THROWS_AS(bad(ops::ones({4, 6}), true), InvalidArgument);    // 3 does not broadcast to 6
}

TEST_CASE("Dropout's gradient is the mask scaled by 1 / (1 - rate)", "[layers]") {
  layers::Dropout d(0.25, {.seed = 9});
  Tensor x = ops::ones({10, 10});
  GradientTape tape;
  tape.watch(x);
  Tensor y = d(x, true);
  Tensor g = tape.gradient(ops::reduce_sum(y), {x})[0];
  CHECK(values_as_double(g) == values_as_double(y));  // x = 1, so y is exactly the mask times the scale
}

TEST_CASE("Dropout validates rate and noise_shape and round-trips Keras configs", "[layers]") {
  CHECK_THROWS_AS(layers::Dropout(-0.1), InvalidArgument);
  CHECK_THROWS_AS(layers::Dropout(1.0), InvalidArgument);
  CHECK_THROWS_AS(layers::Dropout(1.5), InvalidArgument);
  CHECK_THROWS_AS(layers::Dropout(0.5, {.noise_shape = std::vector<int64_t>{0, 1}}), InvalidArgument);

  backend::clear_session();
  layers::Dropout d(0.2);
  CHECK(d.name() == "dropout");
  nlohmann::json c = d.get_config();
  CHECK(c["rate"] == 0.2);
  CHECK(c["seed"].is_null());
  CHECK(c["noise_shape"].is_null());

  // A config as Keras 3 writes it.
  nlohmann::json keras = nlohmann::json::parse(R"({"class_name": "Dropout", "config": {"name": "drop", "trainable": true,
      "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": null},
      "rate": 0.3, "seed": 12, "noise_shape": [null, 1, 3]}})");
  LayerPtr l = deserialize_layer(keras);
  CHECK(l->name() == "drop");
  CHECK(l->get_config()["noise_shape"] == keras["config"]["noise_shape"]);
  CHECK(l->get_config()["seed"] == 12);
  CHECK(l->get_config()["rate"] == 0.3);
}
