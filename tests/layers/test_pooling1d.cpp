#include <catch2/catch.hpp>

#include "framework/ember.h"
#include "tests/support/layer_testing.h"

using namespace ember;
using namespace ember::testing;

namespace {
Tensor f32(const std::vector<double>& v, const Shape& s) { return make(v, s, DType::Float32); }
Tensor five() { return f32({1, 5, 2, 4, 3}, {1, 5, 1}); }
}  // namespace

// Pooling layers have no weights, and Keras lets a built one take other lengths and channels, so the harness's
// changed-channels check does not apply.
TEST_CASE("MaxPooling1D, AveragePooling1D and the global 1-D pools conformance", "[layers]") {
  run_layer_test({.what = "MaxPooling1D()",
                  .make = [] { return std::make_shared<layers::MaxPooling1D>(); },
                  .input_shapes = {{2, 7, 3}},
                  .check_bad_input_shape = false});
  run_layer_test({.what = "MaxPooling1D(3, strides 2, same)",
                  .make = [] {
                    return std::make_shared<layers::MaxPooling1D>(3, layers::MaxPooling1DOptions{.strides = 2, .padding = "same"});
                  },
                  .input_shapes = {{2, 7, 3}},
                  .check_bad_input_shape = false});
  run_layer_test({.what = "AveragePooling1D(2)",
                  .make = [] { return std::make_shared<layers::AveragePooling1D>(2); },
                  .input_shapes = {{2, 7, 3}},
                  .check_bad_input_shape = false});
  run_layer_test({.what = "AveragePooling1D(3, strides 1, same)",
                  .make = [] {
                    return std::make_shared<layers::AveragePooling1D>(
                        3, layers::AveragePooling1DOptions{.strides = 1, .padding = "same"});
                  },
                  .input_shapes = {{2, 7, 3}},
                  .check_bad_input_shape = false});
  run_layer_test({.what = "GlobalAveragePooling1D()",
                  .make = [] { return std::make_shared<layers::GlobalAveragePooling1D>(); },
                  .input_shapes = {{2, 7, 3}},
                  .check_bad_input_shape = false});
  run_layer_test({.what = "GlobalMaxPooling1D(keepdims)",
                  .make = [] {
                    return std::make_shared<layers::GlobalMaxPooling1D>(layers::GlobalMaxPooling1DOptions{.keepdims = true});
                  },
                  .input_shapes = {{2, 7, 3}},
                  .check_bad_input_shape = false});
}

TEST_CASE("1-D pooling layers compute Keras's values, shapes and config", "[layers]") {
  backend::clear_session();
  layers::MaxPooling1D m;
  CHECK(m.name() == "max_pooling1d");
  check_tensor(m(five()), DType::Float32, {1, 2, 1}, {5, 4});
  check_tensor(layers::MaxPooling1D(2, {.padding = "same"})(five()), DType::Float32, {1, 3, 1}, {5, 4, 3});
  check_tensor(layers::MaxPooling1D(2, {.strides = 1})(five()), DType::Float32, {1, 4, 1}, {5, 5, 4, 4});
  layers::AveragePooling1D a(2);
  CHECK(a.name() == "average_pooling1d");
  check_tensor(a(five()), DType::Float32, {1, 2, 1}, {3, 3});
  // SAME windows at the ends average only their real steps (TF): windows {1, 5}, {5, 2, 4}, {4, 3}.
  check_tensor(layers::AveragePooling1D(3, {.strides = 2, .padding = "same"})(five()), DType::Float32, {1, 3, 1},
               {3, 11.0 / 3, 3.5});
  // A built pool takes any length and channel count (Keras's input spec is ndim=3).
  CHECK(m(ops::zeros({2, 9, 4})).shape() == Shape{2, 4, 4});
  // TF gives an empty output when the input is shorter than a VALID window.
  CHECK(layers::MaxPooling1D(3)(ops::zeros({1, 2, 3})).shape() == Shape{1, 0, 3});

  nlohmann::json c = layers::MaxPooling1D(3, {.strides = 1}).get_config();
  CHECK(c["pool_size"] == nlohmann::json({3}));
  CHECK(c["strides"] == nlohmann::json({1}));
  CHECK(c["padding"] == "valid");
  CHECK(c["data_format"] == "channels_last");
  CHECK(m.get_config()["strides"] == nlohmann::json({2}));  // strides default to pool_size
  CHECK(m.compute_output_shape({-1, 28, 8}) == Shape{-1, 14, 8});
  CHECK(m.compute_output_shape({-1, -1, 8}) == Shape{-1, -1, 8});
  CHECK(layers::AveragePooling1D(2, {.padding = "same"}).compute_output_shape({-1, 5, 3}) == Shape{-1, 3, 3});

  layers::GlobalAveragePooling1D gap;
  CHECK(gap.name() == "global_average_pooling1d");
  const Tensor x = f32({1, 2, 3, 4, 5, 6}, {1, 3, 2});
  check_tensor(gap(x), DType::Float32, {1, 2}, {3, 4});
  check_tensor(layers::GlobalMaxPooling1D()(x), DType::Float32, {1, 2}, {5, 6});
  check_tensor(layers::GlobalMaxPooling1D({.keepdims = true})(x), DType::Float32, {1, 1, 2}, {5, 6});
  CHECK(layers::GlobalAveragePooling1D({.keepdims = true}).compute_output_shape({-1, 7, 3}) == Shape{-1, 1, 3});
  CHECK(gap.compute_output_shape({-1, -1, 3}) == Shape{-1, 3});
  CHECK(gap.get_config()["keepdims"] == false);
  CHECK(gap.get_config()["data_format"] == "channels_last");
}

TEST_CASE("1-D pooling layers load Keras 3 configs and reject bad arguments", "[layers]") {
  const auto j = nlohmann::json::parse(R"({"module": "keras.layers", "class_name": "AveragePooling1D", "config": {
    "name": "average_pooling1d", "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy",
    "config": {"name": "float32"}, "registered_name": null}, "pool_size": [3], "padding": "same", "strides": [2],
    "data_format": "channels_last"}, "registered_name": null})");
  LayerPtr l = deserialize_layer(j);
  auto* a = dynamic_cast<layers::AveragePooling1D*>(l.get());
  REQUIRE(a != nullptr);
  CHECK(a->pool_size() == 3);
  CHECK(a->options().strides == 2);
  CHECK(a->options().padding == "same");
  nlohmann::json max = j;
  max["class_name"] = "MaxPooling1D";
  max["config"]["strides"] = nullptr;  // Keras's None: the pool size
  LayerPtr m = deserialize_layer(max);
  REQUIRE(dynamic_cast<layers::MaxPooling1D*>(m.get()) != nullptr);
  CHECK(dynamic_cast<layers::MaxPooling1D*>(m.get())->options().strides == 3);
  nlohmann::json bad = j;
  bad["config"]["pool_size"] = {3, 3};
  CHECK_THROWS_AS(deserialize_layer(bad), InvalidArgument);
  const auto g = nlohmann::json::parse(R"({"module": "keras.layers", "class_name": "GlobalMaxPooling1D", "config": {
    "name": "global_max_pooling1d", "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy",
    "config": {"name": "float32"}, "registered_name": null}, "data_format": "channels_last", "keepdims": true},
    "registered_name": null})");
  LayerPtr gl = deserialize_layer(g);
  CHECK((*gl)(ops::zeros({2, 5, 3})).shape() == Shape{2, 1, 3});

  CHECK_THROWS_AS(layers::MaxPooling1D(0), InvalidArgument);
  CHECK_THROWS_AS(layers::AveragePooling1D(2, {.strides = -1}), InvalidArgument);
  CHECK_THROWS_AS(layers::MaxPooling1D(2, {.padding = "causal"}), InvalidArgument);
  CHECK_THROWS_AS(layers::MaxPooling1D(2, {.data_format = "channels_first"}), InvalidArgument);
  CHECK_THROWS_AS(layers::GlobalAveragePooling1D({.data_format = "channels_first"}), InvalidArgument);
  for (const LayerPtr& p : std::vector<LayerPtr>{std::make_shared<layers::MaxPooling1D>(2, layers::MaxPooling1DOptions{.name = "p"}),
                                                 std::make_shared<layers::GlobalMaxPooling1D>(layers::GlobalMaxPooling1DOptions{.name = "p"})}) {
    try {
      (*p)(ops::zeros({1, 4, 4, 2}));
      FAIL("expected InvalidArgument");
    } catch (const InvalidArgument& e) {
      CHECK_THAT(e.what(), Catch::Contains(p->class_name() + " 'p'") && Catch::Contains("(1, 4, 4, 2)") &&
                               Catch::Contains("rank-3"));
    }
  }
}
