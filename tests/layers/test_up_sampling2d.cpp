#include <catch2/catch.hpp>

#include "framework/ember.h"
#include "tests/support/layer_testing.h"

using namespace ember;
using namespace ember::testing;

namespace {
Tensor f32(const std::vector<double>& v, const Shape& s) { return make(v, s, DType::Float32); }
}  // namespace

// No weights, and a built layer takes any height, width and channels (Keras's input spec is ndim=4).
TEST_CASE("UpSampling2D conformance", "[layers]") {
  run_layer_test({.what = "UpSampling2D()",
                  .make = [] { return std::make_shared<layers::UpSampling2D>(); },
                  .input_shapes = {{2, 3, 4, 2}},
                  .check_bad_input_shape = false});
  run_layer_test({.what = "UpSampling2D((3, 2), bilinear)",
                  .make = [] {
                    return std::make_shared<layers::UpSampling2D>(layers::Size2{3, 2},
                                                                  layers::UpSampling2DOptions{.interpolation = "bilinear"});
                  },
                  .input_shapes = {{2, 3, 4, 2}},
                  .check_bad_input_shape = false});
}

TEST_CASE("UpSampling2D computes Keras's values and config", "[layers]") {
  backend::clear_session();
  layers::UpSampling2D up({1, 2});
  CHECK(up.name() == "up_sampling2d");
  const Tensor x = f32({1, 2, 3, 4}, {1, 2, 2, 1});
  check_tensor(up(x), DType::Float32, {1, 2, 4, 1}, {1, 1, 2, 2, 3, 3, 4, 4});
  check_tensor(layers::UpSampling2D(2)(x), DType::Float32, {1, 4, 4, 1},
               {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});

  // Bilinear, half-pixel centres (tf.image.resize): output i reads input (i + 0.5) / 2 - 0.5, clamped at the
  // edges, so a row [0, 4] becomes [0, 1, 3, 4].
  layers::UpSampling2D bilinear({1, 2}, {.interpolation = "bilinear"});
  check_tensor(bilinear(f32({0, 4}, {1, 1, 2, 1})), DType::Float32, {1, 1, 4, 1}, {0, 1, 3, 4});
  // Along both axes: width first, then height, as TF's kernel does.
  check_tensor(layers::UpSampling2D(2, {.interpolation = "BILINEAR"})(f32({0, 4, 8, 12}, {1, 2, 2, 1})),
               DType::Float32, {1, 4, 4, 1}, {0, 1, 3, 4, 2, 3, 5, 6, 6, 7, 9, 10, 8, 9, 11, 12});
  // TF rounds (i + 0.5) * scale before subtracting 0.5: from 3 rows to 9, output row 1 reads input row 0 with
  // weight 0 exactly (a fused multiply-add would give 1.5e-8, and 1e6 * 1.5e-8 here).
  const std::vector<float> tall = layers::UpSampling2D({3, 1}, {.interpolation = "bilinear"})(
                                      f32({0, 1e6, 0}, {1, 3, 1, 1}))
                                      .to_vector<float>();
  REQUIRE(tall.size() == 9);
  CHECK(tall[1] == 0.0f);
  CHECK(tall[4] == 1e6f);
  // Under mixed_float16 the weights are computed in float32 and the output keeps the compute dtype.
  layers::UpSampling2D half({1, 2}, {.interpolation = "bilinear", .dtype = "mixed_float16"});
  check_tensor(half(f32({0, 4}, {1, 1, 2, 1})), DType::Float16, {1, 1, 4, 1}, {0, 1, 3, 4});

  nlohmann::json c = layers::UpSampling2D({2, 3}, {.interpolation = "Bilinear"}).get_config();
  CHECK(c["size"] == nlohmann::json({2, 3}));
  CHECK(c["interpolation"] == "bilinear");
  CHECK(c["data_format"] == "channels_last");
  CHECK(up.compute_output_shape({-1, 3, -1, 5}) == Shape{-1, 3, -1, 5});
  CHECK(layers::UpSampling2D({2, 3}).compute_output_shape({-1, 3, 4, 5}) == Shape{-1, 6, 12, 5});
}

TEST_CASE("UpSampling2D loads a Keras 3 config and rejects bad arguments", "[layers]") {
  const auto j = nlohmann::json::parse(R"({"module": "keras.layers", "class_name": "UpSampling2D", "config": {
    "name": "up_sampling2d", "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy", "config":
    {"name": "float32"}, "registered_name": null}, "size": [2, 3], "data_format": "channels_last", "interpolation":
    "bilinear"}, "registered_name": null})");
  LayerPtr l = deserialize_layer(j);
  auto* u = dynamic_cast<layers::UpSampling2D*>(l.get());
  REQUIRE(u != nullptr);
  CHECK(u->size() == layers::Size2(2, 3));
  CHECK(u->options().interpolation == "bilinear");
  nlohmann::json bad = j;
  bad["config"]["interpolation"] = "bicubic";
  CHECK_THROWS_AS(deserialize_layer(bad), InvalidArgument);

  CHECK_THROWS_AS(layers::UpSampling2D(0), InvalidArgument);
  CHECK_THROWS_AS(layers::UpSampling2D({2, -1}), InvalidArgument);
  CHECK_THROWS_AS(layers::UpSampling2D(2, {.data_format = "channels_first"}), InvalidArgument);
  try {
    layers::UpSampling2D(2, {.interpolation = "lanczos3", .name = "u"});
    FAIL("expected InvalidArgument");
  } catch (const InvalidArgument& e) {
    CHECK_THAT(e.what(), Catch::Contains("UpSampling2D 'u'") && Catch::Contains("lanczos3"));
  }
  layers::UpSampling2D u2(2, {.name = "u2"});
  try {
    u2(ops::zeros({2, 3, 4}));
    FAIL("expected InvalidArgument");
  } catch (const InvalidArgument& e) {
    CHECK_THAT(e.what(), Catch::Contains("UpSampling2D 'u2'") && Catch::Contains("(2, 3, 4)") &&
                             Catch::Contains("rank-4"));
  }
}
