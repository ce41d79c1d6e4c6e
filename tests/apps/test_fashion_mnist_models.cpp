// The models apps/train_fashion_mnist trains (apps/fashion_mnist.h): each takes the pipeline's batches and
// gives 10 logits; the LSTM (the classic Keras example RNN) learns on a slice of Fashion-MNIST.
#include <catch2/catch.hpp>

#include "apps/fashion_mnist.h"
#include "framework/ember.h"

using namespace ember;

namespace {

datasets::Split slice(const datasets::Split& s, int64_t n) {
  return {ops::slice(s.x, {0, 0, 0}, {n, -1, -1}), ops::slice(s.y, {0}, {n})};
}

}  // namespace

TEST_CASE("every train_fashion_mnist model takes the pipeline's batches and gives 10 logits", "[apps]") {
  auto [train, test] = datasets::fashion_mnist::load_data();
  const datasets::Split few = slice(test, 8);
  for (const std::string kind : {"mlp", "cnn", "seed_cnn", "lstm"}) {
    INFO(kind);
    backend::clear_session();
    auto model = fashion_mnist::make_model(kind);
    const data::Dataset ds = fashion_mnist::pipeline(few, fashion_mnist::image_shape(kind), 8, false, 1);
    for (const data::Element& batch : ds) CHECK((*model)(batch[0]).shape() == Shape{8, 10});
  }
  // LSTM(128) over 28 rows of 28 pixels: Keras's parameter count, 4 * (28 * 128 + 128 * 128 + 128) + 10 * 128 + 10.
  CHECK(fashion_mnist::make_model("lstm")->count_params() == 80384 + 1290);
}

TEST_CASE("the LSTM model learns Fashion-MNIST rows on a slice", "[apps][learning]") {
  backend::clear_session();
  random::set_seed(42);
  auto [train, test] = datasets::fashion_mnist::load_data();
  const Shape shape = fashion_mnist::image_shape("lstm");
  auto train_ds = fashion_mnist::pipeline(slice(train, 3000), shape, 64, true, 42);
  auto test_ds = fashion_mnist::pipeline(slice(test, 1000), shape, 128, false, 42);
  auto model = fashion_mnist::make_model("lstm");
  model->compile({.optimizer = optimizers::Adam({.learning_rate = 2e-3}),
                  .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                  .metrics = {"accuracy"}});
  History h = model->fit(train_ds, {.epochs = 2, .verbose = 0});
  CHECK(h.history.at("loss").back() < h.history.at("loss").front());
  Logs scores = model->evaluate(test_ds, {.verbose = 0});
  INFO("test accuracy " << scores.at("accuracy"));
  CHECK(scores.at("accuracy") > 0.6);
}
