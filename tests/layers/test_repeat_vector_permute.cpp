// RepeatVector and Permute (Keras's layers/reshaping).
#include <catch2/catch.hpp>

#include "framework/ember.h"
#include "tests/support/layer_testing.h"

using namespace ember;
using namespace ember::testing;

TEST_CASE("RepeatVector conformance, values and checks", "[layers]") {
  run_layer_test({.what = "RepeatVector(3)",
                  .make = [] { return std::make_shared<layers::RepeatVector>(3); },
                  .input_shapes = {{2, 4}},
                  .check_bad_input_shape = false});  // Keras's input spec fixes only the rank
  layers::RepeatVector r(2);
  check_tensor(r(make({1, 2, 3, 4, 5, 6}, {2, 3}, DType::Float32)), DType::Float32, {2, 2, 3},
               {1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6});
  CHECK(r(ops::ones({1, 5})).shape() == Shape{1, 2, 5});
  CHECK(r(ops::ones({0, 3})).shape() == Shape{0, 2, 3});
  try {
    r(ops::ones({2, 3, 4}));
    FAIL("expected InvalidArgument");
  } catch (const InvalidArgument& e) {
    const std::string m = e.what();
    CHECK(m.find("RepeatVector '" + r.name() + "'") != std::string::npos);
    CHECK(m.find("rank-2") != std::string::npos);
    CHECK(m.find("(2, 3, 4)") != std::string::npos);
  }
  CHECK_THROWS_AS(layers::RepeatVector(3)(layers::Input({2, 2})), InvalidArgument);
  CHECK(layers::RepeatVector(3)(layers::Input({5})).shape() == Shape{-1, 3, 5});
  CHECK_THROWS_AS(layers::RepeatVector(0), InvalidArgument);

  backend::clear_session();
  layers::RepeatVector named(4);
  CHECK(named.name() == "repeat_vector");
  const nlohmann::json keras = nlohmann::json::parse(R"({"name": "repeat_vector", "trainable": true, "dtype": {"module":
      "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": null}, "n": 3})");
  LayerPtr l = deserialize_layer({{"class_name", "RepeatVector"}, {"config", keras}});
  CHECK(l->get_config() == keras);
  CHECK_THROWS_AS(deserialize_layer({{"class_name", "RepeatVector"}, {"config", {{"name", "r"}}}}), InvalidArgument);
}

TEST_CASE("Permute conformance, values and checks", "[layers]") {
  run_layer_test({.what = "Permute((2, 1))",
                  .make = [] { return std::make_shared<layers::Permute>(std::vector<int64_t>{2, 1}); },
                  .input_shapes = {{2, 3, 4}},
                  .check_bad_input_shape = false});  // Keras's input spec fixes only the rank
  run_layer_test({.what = "Permute((3, 1, 2))",
                  .make = [] { return std::make_shared<layers::Permute>(std::vector<int64_t>{3, 1, 2}); },
                  .input_shapes = {{2, 3, 4, 5}},
                  .check_bad_input_shape = false});
  layers::Permute p({2, 1});
  check_tensor(p(make({1, 2, 3, 4, 5, 6}, {1, 2, 3}, DType::Float32)), DType::Float32, {1, 3, 2}, {1, 4, 2, 5, 3, 6});
  CHECK(layers::Permute({3, 1, 2})(layers::Input({4, 5, 6})).shape() == Shape{-1, 6, 4, 5});
  try {
    p(ops::ones({2, 3}));
    FAIL("expected InvalidArgument");
  } catch (const InvalidArgument& e) {
    const std::string m = e.what();
    CHECK(m.find("Permute '" + p.name() + "'") != std::string::npos);
    CHECK(m.find("rank 3") != std::string::npos);
    CHECK(m.find("(2, 3)") != std::string::npos);
  }
  CHECK_THROWS_AS(layers::Permute({0, 1}), InvalidArgument);  // the batch axis cannot move
  CHECK_THROWS_AS(layers::Permute({1, 1}), InvalidArgument);
  CHECK_THROWS_AS(layers::Permute({1, 3}), InvalidArgument);
  CHECK_THROWS_AS(layers::Permute({}), InvalidArgument);

  backend::clear_session();
  CHECK(layers::Permute({1}).name() == "permute");
  const nlohmann::json keras = nlohmann::json::parse(R"({"name": "permute", "trainable": true, "dtype": {"module":
      "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": null}, "dims": [2, 1]})");
  LayerPtr l = deserialize_layer({{"class_name", "Permute"}, {"config", keras}});
  CHECK(l->get_config() == keras);
  CHECK_THROWS_AS(deserialize_layer({{"class_name", "Permute"}, {"config", {{"dims", 2}}}}), InvalidArgument);
}
