#include <catch2/catch.hpp>

#include "framework/ember.h"
#include "tests/support/layer_testing.h"

using namespace ember;
using namespace ember::testing;

using layers::Embedding;

TEST_CASE("Embedding conformance", "[layers]") {
  for (DType index_dtype : {DType::Int32, DType::Int64}) {
    run_layer_test({.what = std::string("Embedding(10, 3) on ") + dtype_name(index_dtype),
                    .make = [] { return std::make_shared<Embedding>(10, 3); },
                    .input_shapes = {{4, 5}},
                    .make_inputs = [index_dtype](DType) {
                      return std::vector<Tensor>{make({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 8, 7, 6, 5, 0, 0, 1, 1, 2}, {4, 5},
                                                      index_dtype)};
                    },
                    .trainable_weights = 1,
                    .weight_shapes = {{10, 3}},
                    .check_bad_input_shape = false});  // Keras's Embedding takes any index shape
  }
}

TEST_CASE("Embedding looks up rows", "[layers]") {
  backend::clear_session();
  Embedding e(4, 2);
  CHECK(e.name() == "embedding");
  Tensor idx = make({3, 0, 1, 3}, {2, 2}, DType::Int32);
  Tensor y = e(idx);
  CHECK(y.shape() == Shape{2, 2, 2});
  CHECK(y.dtype() == DType::Float32);
  REQUIRE(e.weights().size() == 1);
  CHECK(e.weights()[0].name() == "embedding/embeddings");
  // Keras's "uniform": RandomUniform(-0.05, 0.05).
  for (double v : values_as_double(e.embeddings())) CHECK(std::abs(v) <= 0.05);
  e.set_weights({make({0, 1, 10, 11, 20, 21, 30, 31}, {4, 2}, DType::Float32)});
  check_tensor(e(idx), DType::Float32, {2, 2, 2}, {30, 31, 0, 1, 10, 11, 30, 31});
  // Any index shape after the build; floating indices are truncated to int32, as Keras casts them.
  check_tensor(e(make({2.7, 1.2}, {2}, DType::Float32)), DType::Float32, {2, 2}, {20, 21, 10, 11});
  CHECK_THROWS_AS(e(make({4}, {1}, DType::Int32)), InvalidArgument);
  CHECK_THROWS_AS(e(make({-1}, {1}, DType::Int64)), InvalidArgument);

  // The gradient reaches only the rows looked up (summed over repeats).
  Tensor g;
  {
    GradientTape tape;
    Tensor out = e(idx);
    g = tape.gradient(ops::reduce_sum(out), {e.embeddings()})[0];
  }
  check_tensor(g, DType::Float32, {4, 2}, {1, 1, 1, 1, 0, 0, 2, 2});
}

TEST_CASE("Embedding outputs the compute dtype under mixed precision", "[layers]") {
  Embedding e(5, 3, {.dtype = "mixed_float16"});
  Tensor y = e(make({1, 2}, {2}, DType::Int32));
  CHECK(y.dtype() == DType::Float16);
  CHECK(e.embeddings().dtype() == DType::Float32);
  // Symbolic calls report the same dtype.
  Tensor in = layers::Input({7}, {.batch_size = -1, .dtype = DType::Int32, .name = ""});
  Tensor out = Embedding(5, 3, {.dtype = "mixed_float16"})(in);
  CHECK(out.dtype() == DType::Float16);
  CHECK(out.shape() == Shape{-1, 7, 3});
}

TEST_CASE("Embedding errors and Keras configs", "[layers]") {
  CHECK_THROWS_AS(Embedding(0, 3), InvalidArgument);
  CHECK_THROWS_AS(Embedding(3, -1), InvalidArgument);
  Embedding e(10, 4, {.embeddings_regularizer = regularizers::L1(0.1), .mask_zero = true});
  nlohmann::json c = e.get_config();
  CHECK(c["input_dim"] == 10);
  CHECK(c["output_dim"] == 4);
  CHECK(c["mask_zero"] == true);
  CHECK(c["embeddings_initializer"]["class_name"] == "RandomUniform");
  CHECK(c["embeddings_initializer"]["config"]["minval"] == -0.05);
  CHECK(c["embeddings_regularizer"]["class_name"] == "L1");
  e(make({1}, {1}, DType::Int32));
  CHECK(e.losses().size() == 1);

  // tf-keras's config (with input_length and batch_input_shape) and Keras 3's both load.
  nlohmann::json tf_keras = nlohmann::json::parse(R"({"class_name": "Embedding", "config": {"name": "emb",
      "trainable": true, "dtype": "float32", "batch_input_shape": [null, null], "input_dim": 3, "output_dim": 4,
      "embeddings_initializer": {"module": "keras.initializers", "class_name": "RandomUniform",
      "config": {"minval": -0.05, "maxval": 0.05, "seed": null}, "registered_name": null},
      "embeddings_regularizer": null, "activity_regularizer": null, "embeddings_constraint": null,
      "mask_zero": false, "input_length": null}})");
  LayerPtr l = deserialize_layer(tf_keras);
  CHECK(l->name() == "emb");
  CHECK((*l)(make({0, 2}, {2}, DType::Int32)).shape() == Shape{2, 4});
}
