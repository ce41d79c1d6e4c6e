#include <catch2/catch.hpp>

#include "framework/ember.h"
#include "tests/support/layer_testing.h"

using namespace ember;
using namespace ember::testing;

using layers::BatchNormalization;
using layers::BatchNormalizationOptions;

TEST_CASE("BatchNormalization conformance", "[layers]") {
  for (bool training : {false, true}) {
    const std::string mode = training ? " (training)" : " (inference)";
    run_layer_test({.what = "BatchNormalization()" + mode,
                    .make = [] { return std::make_shared<BatchNormalization>(); },
                    .input_shapes = {{6, 3}},
                    .trainable_weights = 2,
                    .non_trainable_weights = 2,
                    .weight_shapes = {{3}, {3}, {3}, {3}},
                    .training = training});
    run_layer_test({.what = "BatchNormalization() on NHWC" + mode,
                    .make = [] { return std::make_shared<BatchNormalization>(); },
                    .input_shapes = {{2, 3, 3, 4}},
                    .trainable_weights = 2,
                    .non_trainable_weights = 2,
                    .weight_shapes = {{4}, {4}, {4}, {4}},
                    .training = training});
    run_layer_test({.what = "BatchNormalization(axis 1, no center)" + mode,
                    .make = [] { return std::make_shared<BatchNormalization>(BatchNormalizationOptions{.axis = 1, .center = false}); },
                    .input_shapes = {{3, 2, 4}},
                    .trainable_weights = 1,
                    .non_trainable_weights = 2,
                    .weight_shapes = {{2}, {2}, {2}},
                    .training = training,
                    .check_bad_input_shape = false});  // axis 1 is the feature axis: the last one may change
  }
}

TEST_CASE("BatchNormalization normalises with batch statistics and updates the moving ones", "[layers]") {
  backend::clear_session();
  BatchNormalization bn;
  const Tensor x = make({1, 2, 3, 6}, {2, 2}, DType::Float32);
  // Batch mean (2, 4), biased variance (1, 4); values from keras.layers.BatchNormalization()(x, training=True).
  check_tensor(bn(x, true), DType::Float32, {2, 2},
               {-0.9995003938674927, -0.9998750686645508, 0.9995005130767822, 0.9998750686645508}, 1e-6, 1e-6);
  std::vector<Variable> w = bn.weights();
  REQUIRE(w.size() == 4);
  CHECK(w[0].name() == "batch_normalization/gamma");
  CHECK(w[1].name() == "batch_normalization/beta");
  CHECK(w[2].name() == "batch_normalization/moving_mean");
  CHECK(w[3].name() == "batch_normalization/moving_variance");
  // moving = moving * 0.99 + batch * 0.01.
  check_tensor(bn.moving_mean(), DType::Float32, {2}, {0.02, 0.04});
  check_tensor(bn.moving_variance(), DType::Float32, {2}, {1.0, 1.03});
  // Inference uses the moving statistics and leaves them alone: (x - mm) / sqrt(mv + eps).
  check_tensor(bn(x, false), DType::Float32, {2, 2},
               {0.9795103669166565, 1.9303085803985596, 2.978511333465576, 5.86971378326416});
  check_tensor(bn.moving_mean(), DType::Float32, {2}, {0.02, 0.04});

  // gamma and beta apply after normalising.
  bn.set_weights({make({2, 3}, {2}, DType::Float32), make({1, -1}, {2}, DType::Float32),
                  make({0, 0}, {2}, DType::Float32), make({1, 1}, {2}, DType::Float32)});
  const double s1 = 1 / std::sqrt(1.001);
  check_tensor(bn(make({1, 2}, {1, 2}, DType::Float32), false), DType::Float32, {1, 2}, {2 * s1 + 1, 3 * 2 * s1 - 1});
}

TEST_CASE("A frozen BatchNormalization runs in inference mode even when training", "[layers]") {
  BatchNormalization bn({.trainable = false});
  const Tensor x = make({1, 2, 3, 6}, {2, 2}, DType::Float32);
  Tensor y = bn(x, true);
  check_tensor(y, DType::Float32, {2, 2}, values_as_double(x * (1 / std::sqrt(1.001))));
  check_tensor(bn.moving_mean(), DType::Float32, {2}, {0, 0});
  check_tensor(bn.moving_variance(), DType::Float32, {2}, {1, 1});
  CHECK(bn.trainable_weights().empty());
  CHECK(bn.non_trainable_weights().size() == 4);
  // Unfreezing brings back batch statistics and updates.
  bn.set_trainable(true);
  bn(x, true);
  check_tensor(bn.moving_mean(), DType::Float32, {2}, {0.02, 0.04});
}

TEST_CASE("BatchNormalization's moving-statistics update is not recorded by the tape", "[layers]") {
  BatchNormalization bn;
  Tensor x = make({1, 2, 3, 6, 0, 1}, {3, 2}, DType::Float32);
  GradientTape tape;
  tape.watch(x);
  Tensor y = bn(x, true);
  std::vector<Tensor> g = tape.gradient(ops::reduce_sum(y * y), {x, bn.moving_mean()});
  CHECK(g[0].defined());
  CHECK_FALSE(g[1].defined());
}

TEST_CASE("BatchNormalization under mixed_float16 keeps float32 variables and statistics", "[layers]") {
  BatchNormalization bn({.dtype = "mixed_float16"});
  // Large offsets: a float16 mean of these squares would lose digits.
  const Tensor x = make({1000, 1001, 1002, 1003}, {4, 1}, DType::Float32);
  Tensor y = bn(x, true);
  CHECK(y.dtype() == DType::Float16);
  CHECK(bn.moving_mean().dtype() == DType::Float32);
  check_tensor(bn.moving_mean(), DType::Float32, {1}, {10.015});
  check_tensor(bn.moving_variance(), DType::Float32, {1}, {0.99 + 0.0125}, 1e-6, 1e-6);
  const double s = 1 / std::sqrt(1.25 + 1e-3);
  check_tensor(y, DType::Float16, {4, 1}, {-1.5 * s, -0.5 * s, 0.5 * s, 1.5 * s}, 2e-3, 1e-3);
}

TEST_CASE("BatchNormalization errors and Keras configs", "[layers]") {
  BatchNormalization bn;
  bn(ops::ones({2, 3, 3, 4}), true);
  CHECK(bn(ops::ones({5, 7, 2, 4}), false).shape() == Shape{5, 7, 2, 4});  // only the feature axis is fixed
  CHECK_THROWS_AS(bn(ops::ones({2, 3, 3, 5})), InvalidArgument);
  CHECK_THROWS_AS(bn(ops::ones({2, 4})), InvalidArgument);
  CHECK_THROWS_AS(BatchNormalization({.axis = 3})(ops::ones({2, 3})), InvalidArgument);

  nlohmann::json c = bn.get_config();
  for (const char* key : {"axis", "momentum", "epsilon", "center", "scale", "beta_initializer", "gamma_initializer",
                          "moving_mean_initializer", "moving_variance_initializer", "beta_regularizer",
                          "gamma_regularizer", "beta_constraint", "gamma_constraint", "synchronized"})
    CHECK(c.contains(key));
  CHECK(c["momentum"] == 0.99);
  CHECK(c["epsilon"] == 0.001);
  CHECK(c["gamma_initializer"]["class_name"] == "Ones");

  // As Keras 3 writes it (initializers with module / registered_name).
  nlohmann::json keras = nlohmann::json::parse(R"({"class_name": "BatchNormalization", "config": {"name": "bn",
      "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"},
      "registered_name": null}, "axis": -1, "momentum": 0.9, "epsilon": 0.01, "center": true, "scale": false,
      "beta_initializer": {"module": "keras.initializers", "class_name": "Zeros", "config": {}, "registered_name": null},
      "gamma_initializer": {"module": "keras.initializers", "class_name": "Ones", "config": {}, "registered_name": null},
      "moving_mean_initializer": {"module": "keras.initializers", "class_name": "Zeros", "config": {}, "registered_name": null},
      "moving_variance_initializer": {"module": "keras.initializers", "class_name": "Ones", "config": {}, "registered_name": null},
      "beta_regularizer": null, "gamma_regularizer": {"module": "keras.regularizers", "class_name": "L2",
      "config": {"l2": 0.01}, "registered_name": null}, "beta_constraint": null, "gamma_constraint": null,
      "synchronized": false, "renorm": false, "renorm_clipping": null, "renorm_momentum": 0.99}})");
  LayerPtr l = deserialize_layer(keras);
  CHECK(l->get_config()["momentum"] == 0.9);
  CHECK(l->get_config()["scale"] == false);
  (*l)(ops::ones({2, 3}), true);
  CHECK(l->trainable_weights().size() == 1);  // beta only
  keras["config"]["axis"] = nlohmann::json::array({3});  // tf-keras writes a one-element list
  CHECK(deserialize_layer(keras)->get_config()["axis"] == 3);
  keras["config"]["renorm"] = true;
  CHECK_THROWS_AS(deserialize_layer(keras), InvalidArgument);
}

TEST_CASE("BatchNormalization regularizers join the losses", "[layers]") {
  BatchNormalization bn({.gamma_regularizer = regularizers::L2(0.5)});
  bn(ops::ones({2, 3}));
  std::vector<Tensor> losses = bn.losses();
  REQUIRE(losses.size() == 1);
  CHECK(losses[0].item<float>() == Approx(0.5 * 3));  // gamma = ones(3)
}

TEST_CASE("Freezing a model freezes the BatchNormalization inside it (Keras's trainable setter)", "[layers]") {
  auto base = std::make_shared<Sequential>(std::vector<SequentialEntry>{
      layers::Input({2}), layers::Dense(2), BatchNormalization()}, ModelOptions{.name = "base"});
  Tensor inputs = layers::Input({2});
  Model model(inputs, layers::Dense(1)((*base)(inputs)));
  base->set_trainable(false);
  for (const LayerPtr& l : base->layers()) CHECK_FALSE(l->trainable());
  model.compile({.optimizer = "sgd", .loss = "mse"});
  const Tensor x = make({1, 2, 3, 6, -1, 4, 0.5, 2}, {4, 2}, DType::Float32), y = ops::ones({4, 1});
  const std::vector<Tensor> before = base->get_weights();
  model.fit(x, y, {.batch_size = 2, .epochs = 2, .verbose = 0});
  const std::vector<Tensor> after = base->get_weights();
  REQUIRE(after.size() == before.size());
  for (size_t i = 0; i < after.size(); ++i) CHECK(ops::reduce_all(ops::equal(before[i], after[i])).item<bool>());
  // Unfreezing the model unfreezes its layers again.
  base->set_trainable(true);
  for (const LayerPtr& l : base->layers()) CHECK(l->trainable());
}
