#include <catch2/catch.hpp>

#include <cmath>

#include "framework/ember.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using namespace ember::testing;

namespace {

Tensor rand_input(const Shape& shape, uint64_t seed) { return random::uniform(shape, {.minval = -1, .maxval = 1, .seed = seed}); }

// One SGD step on mean(y^2 - y * t) for the model's trainable weights; returns (loss before, loss after).
std::pair<float, float> sgd_step(Layer& model, const std::vector<Tensor>& xs, float lr = 0.05f) {
  auto loss_of = [&] {
    Tensor y = xs.size() == 1 ? model(xs[0], true) : model(xs, true);
    return ops::reduce_mean(ops::square(y - 0.5));
  };
  std::vector<Variable> vars = model.trainable_weights();
  REQUIRE_FALSE(vars.empty());
  GradientTape tape;
  Tensor loss = loss_of();
  std::vector<Tensor> grads = tape.gradient(loss, std::vector<Tensor>(vars.begin(), vars.end()));
  for (size_t i = 0; i < vars.size(); ++i) {
    REQUIRE(grads[i].defined());
    vars[i].assign_sub(grads[i] * lr);
  }
  return {loss.item<float>(), loss_of().item<float>()};
}

struct Residual : Model {
  layers::Dense d1{8, {.activation = "relu"}}, d2{8};
  Tensor call(const Tensor& x, bool training) override { return x + d2(d1(x)); }
};

}  // namespace

TEST_CASE("Sequential from a list with Input builds at once, calls and trains", "[model]") {
  backend::clear_session();
  Sequential model({
      layers::Input({6}),
      layers::Dense(4, {.activation = "relu"}),
      layers::Dense(3),
  });
  CHECK(model.name() == "sequential");
  CHECK(model.built());
  REQUIRE(model.layers().size() == 2);  // Keras: Sequential.layers omits the InputLayer
  CHECK(model.layers()[0]->name() == "dense");
  CHECK(model.layers()[1]->name() == "dense_1");
  CHECK(model.count_params() == 6 * 4 + 4 + 4 * 3 + 3);
  CHECK(model.weights().size() == 4);
  CHECK(model.weights()[2].name() == "dense_1/kernel");
  Tensor y = model(rand_input({5, 6}, 1));
  CHECK(y.shape() == Shape{5, 3});
  CHECK(model.outputs()[0].shape() == Shape{-1, 3});
  auto [before, after] = sgd_step(model, {rand_input({5, 6}, 2)});
  CHECK(after < before);
  // A wrong per-sample shape names the model and both shapes.
  try {
    model(rand_input({5, 7}, 3));
    FAIL("expected InvalidArgument");
  } catch (const InvalidArgument& e) {
    CHECK_THAT(e.what(), Catch::Contains("(None, 6)") && Catch::Contains("(5, 7)"));
  }
}

TEST_CASE("a model converts each input to its Input's dtype, as Keras does", "[model]") {
  // uint8 images into a float32 Conv2D, int64 ids into an int32 Embedding: fit and predict take them as given.
  random::set_seed(2);
  Sequential cnn({layers::Input({6, 6, 1}), layers::Conv2D(2, 3, {.activation = "relu"}), layers::Flatten(), layers::Dense(3)});
  std::vector<uint8_t> pixels(4 * 36);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>((i * 37) % 256);
  const Tensor images = Tensor::from_vector<uint8_t>(pixels, {4, 6, 6, 1});
  CHECK(same_bits(cnn.predict(images, {.verbose = 0}), cnn.predict(ops::cast(images, DType::Float32), {.verbose = 0})));
  cnn.compile({.optimizer = optimizers::SGD(), .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
  const History h = cnn.fit(images, Tensor::from_vector<int32_t>({0, 1, 2, 1}), {.batch_size = 2, .epochs = 1, .verbose = 0});
  CHECK(std::isfinite(h.history.at("loss")[0]));

  // int32 into a float32 Dense (whose matmul takes no int32).
  Sequential dense({layers::Input({3}), layers::Dense(2)});
  const Tensor ints = Tensor::from_vector<int32_t>({1, 2, 3, 9, 0, 4}, {2, 3});
  CHECK(same_bits(dense.predict(ints, {.verbose = 0}), dense.predict(ops::cast(ints, DType::Float32), {.verbose = 0})));
}

TEST_CASE("Sequential without Input builds on the first call; add and pop", "[model]") {
  Sequential model;
  model.add(layers::Dense(4));
  CHECK_FALSE(model.is_graph_model());
  CHECK(model.weights().empty());
  Tensor y = model(rand_input({2, 3}, 4));
  CHECK(y.shape() == Shape{2, 4});
  CHECK(model.weights().size() == 2);
  model.add(layers::Dense(2));
  CHECK(model(rand_input({2, 3}, 5)).shape() == Shape{2, 2});
  model.pop();
  CHECK(model(rand_input({2, 3}, 5)).shape() == Shape{2, 4});
  CHECK(model.layers().size() == 1);
  Sequential empty;
  CHECK_THROWS_AS(empty(rand_input({2, 3}, 5)), FailedPrecondition);
  CHECK_THROWS_AS(model.add(layers::Input({3})), InvalidArgument);  // Input must come first
}

TEST_CASE("Functional model: DAG with a shared layer, two inputs and two outputs", "[model]") {
  backend::clear_session();
  Tensor a = layers::Input({4}, {.batch_size = -1, .dtype = DType::Float32, .name = "a"});
  Tensor b = layers::Input({4}, {.batch_size = -1, .dtype = DType::Float32, .name = "b"});
  auto shared = std::make_shared<layers::Dense>(3);
  Tensor ha = (*shared)(a), hb = (*shared)(b);
  Tensor out1 = layers::Dense(2)(ha);
  Model model(std::vector<Tensor>{a, b}, std::vector<Tensor>{out1, hb}, {.name = "two_heads"});
  CHECK(model.class_name() == "Functional");
  std::vector<std::string> names;
  for (const LayerPtr& l : model.layers()) names.push_back(l->name());
  // Keras 3 orders by depth from the outputs, ties by first visit: checked against keras.Model.layers.
  CHECK(names == std::vector<std::string>{"a", "dense", "b", "dense_1"});
  CHECK(model.weights().size() == 4);  // the shared layer's weights once
  Tensor xa = rand_input({3, 4}, 6), xb = rand_input({3, 4}, 7);
  std::vector<Tensor> outs = model.call_outputs({xa, xb});
  REQUIRE(outs.size() == 2);
  CHECK(outs[0].shape() == Shape{3, 2});
  check_tensor(outs[1], DType::Float32, {3, 3}, values_as_double((*shared)(xb)));
  CHECK_THROWS_AS(model(xa), InvalidArgument);  // two inputs expected
  CHECK(&model.get_layer("dense") == shared.get());
  CHECK_THROWS_AS(model.get_layer("nope"), NotFound);
}

TEST_CASE("Functional model: one input and several outputs, or several inputs and one output, in braces", "[model]") {
  backend::clear_session();
  Tensor in = layers::Input({4});
  Tensor h = layers::Dense(3)(in);
  Tensor out1 = layers::Dense(2)(h), out2 = layers::Dense(1)(h);
  Model one_in(in, {out1, out2});             // Keras: Model(inp, [out1, out2])
  Model listed_in({in}, {out1, out2});        // Keras: Model([inp], [out1, out2])
  Model plain(in, out1);                      // one of each stays as it was
  CHECK(one_in.inputs().size() == 1);
  CHECK(one_in.outputs().size() == 2);
  CHECK(listed_in.outputs().size() == 2);
  CHECK(plain.outputs().size() == 1);
  const Tensor x = rand_input({5, 4}, 3);
  std::vector<Tensor> outs = one_in.call_outputs({x});
  REQUIRE(outs.size() == 2);
  CHECK(outs[1].shape() == Shape{5, 1});

  Tensor a = layers::Input({2}), b = layers::Input({2});
  Model two_in({a, b}, layers::Add()({a, b}));
  CHECK(two_in.inputs().size() == 2);
  CHECK(two_in.outputs().size() == 1);
  check_tensor(two_in({Tensor::from_vector<float>({1, 2}, {1, 2}), Tensor::from_vector<float>({3, 4}, {1, 2})}),
               DType::Float32, {1, 2}, {4, 6});
}

TEST_CASE("Functional model from API.md trains; clone_model gives fresh weights", "[model]") {
  Tensor inputs = layers::Input({8});
  Tensor h = layers::Dense(16, {.activation = "relu"})(inputs);
  Tensor outputs = layers::Dense(4)(h);
  Model mlp(inputs, outputs, {.name = "mlp"});
  CHECK(mlp.name() == "mlp");
  CHECK(mlp.count_params() == 8 * 16 + 16 + 16 * 4 + 4);
  auto [before, after] = sgd_step(mlp, {rand_input({10, 8}, 8)});
  CHECK(after < before);

  std::shared_ptr<Model> copy = models::clone_model(mlp);
  CHECK(copy->count_params() == mlp.count_params());
  CHECK(copy->weights()[0].name() == mlp.weights()[0].name());  // Keras's clone_model keeps layer names
  Tensor x = rand_input({2, 8}, 9);
  CHECK(values_as_double((*copy)(x)) != values_as_double(mlp(x)));  // but not the weights
  copy->set_weights(mlp.get_weights());
  check_tensor((*copy)(x), DType::Float32, {2, 4}, values_as_double(mlp(x)));
}

TEST_CASE("Subclassed model tracks the layers its call uses", "[model]") {
  Residual model;
  CHECK(model.weights().empty());  // built lazily, as Keras
  Tensor x = rand_input({3, 8}, 10);
  Tensor y = model(x);
  CHECK(y.shape() == Shape{3, 8});
  REQUIRE(model.weights().size() == 4);
  CHECK(model.layers().size() == 2);
  CHECK(model.count_params() == 2 * (8 * 8 + 8));
  auto [before, after] = sgd_step(model, {x});
  CHECK(after < before);
  model.set_trainable(false);
  CHECK(model.trainable_weights().empty());
  CHECK(model.non_trainable_weights().size() == 4);
}

TEST_CASE("Symbolic tensors: clear errors for misuse", "[model]") {
  Tensor in = layers::Input({4});
  CHECK(in.is_symbolic());
  CHECK(in.shape() == Shape{-1, 4});
  CHECK(in.to_string() == "<KerasTensor shape=(None, 4), dtype=float32>");
  CHECK_THROWS_AS(ops::relu(in), InvalidArgument);
  CHECK_THROWS_AS(in.to_vector<float>(), InvalidArgument);
  layers::Dense on_stack(2);
  CHECK_THROWS_AS(on_stack(in), FailedPrecondition);  // the model could not own it
  Tensor other = layers::Input({4});
  Tensor out = layers::Dense(2)(other);
  CHECK_THROWS_AS(Model(in, out), InvalidArgument);  // `other` is not among the inputs
  Tensor d = layers::Dense(2, {.name = "same"})(in);
  Tensor e = layers::Dense(2, {.name = "same"})(d);
  CHECK_THROWS_AS(Model(in, e), InvalidArgument);  // duplicated layer names
}

TEST_CASE("Regularizer penalties join the model's losses", "[model]") {
  Sequential model({layers::Input({2}), layers::Dense(1, {.kernel_regularizer = regularizers::L2(0.5)})});
  model.layers()[0]->set_weights({make({1, 2}, {2, 1}, DType::Float32), make({0}, {1}, DType::Float32)});
  std::vector<Tensor> losses = model.losses();
  REQUIRE(losses.size() == 1);
  CHECK(losses[0].item<float>() == Approx(0.5 * (1 + 4)));
  // Keras regularizes trainable weights only: freezing the layer, or the model around it, drops the
  // penalty (and a frozen layer's loss then leaves out what it no longer trains).
  model.layers()[0]->set_trainable(false);
  CHECK(model.losses().empty());
  model.layers()[0]->set_trainable(true);
  model.set_trainable(false);
  CHECK(model.losses().empty());
  model.set_trainable(true);
  CHECK(model.losses().size() == 1);
  model.compile({.optimizer = "sgd", .loss = "mse"});
  Tensor x = make({1, 1}, {1, 2}, DType::Float32), y = make({3}, {1, 1}, DType::Float32);
  CHECK(model.evaluate(x, y, {.verbose = 0}).at("loss") == Approx(0.0 + 2.5));
  model.layers()[0]->set_trainable(false);
  CHECK(model.evaluate(x, y, {.verbose = 0}).at("loss") == Approx(0.0));
}

TEST_CASE("Layer names and configs the Keras way", "[model]") {
  backend::clear_session();
  CHECK(to_snake_case("GlobalAveragePooling2D") == "global_average_pooling2d");
  CHECK(to_snake_case("Conv2D") == "conv2d");
  CHECK(to_snake_case("BatchNormalization") == "batch_normalization");
  CHECK(to_snake_case("ReLU") == "re_lu");
  layers::Dense a(1), b(1), c(1, {.name = "head"});
  CHECK(a.name() == "dense");
  CHECK(b.name() == "dense_1");
  CHECK(c.name() == "head");
  nlohmann::json j = serialize_layer(a);
  CHECK(j["class_name"] == "Dense");
  CHECK(j["config"]["dtype"]["config"]["name"] == "float32");
  CHECK_THROWS_WITH(deserialize_layer({{"class_name", "NoSuchLayer"}, {"config", nlohmann::json::object()}}),
                    Catch::Contains("NoSuchLayer") && Catch::Contains("Dense"));

  Sequential model({layers::Input({3}), layers::Dense(2)});
  auto again = std::dynamic_pointer_cast<Sequential>(deserialize_layer(serialize_layer(model)));
  REQUIRE(again);
  CHECK(again->count_params() == model.count_params());
  CHECK(again->get_config()["layers"].size() == 2);
}
