// What every registered optimizer must do beyond its golden steps (test_optimizer_golden.cpp): train a
// model through compile, fit and evaluate, and carry its whole state through a .weights.h5 checkpoint so
// that training resumes with the same bits.
#include <catch2/catch.hpp>

#include "framework/ember.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using namespace ember::testing;
using namespace ember::optimizers;

namespace {

// Every registered optimizer but the LossScaleOptimizer wrapper (which needs an inner one).
std::vector<std::string> plain_optimizers() {
  std::vector<std::string> out;
  for (const std::string& name : registered_optimizers())
    if (name != "LossScaleOptimizer") out.push_back(name);
  return out;
}

// A rate at which a few epochs of a small regression visibly lower the loss.
double learning_rate_for(const std::string& name) {
  if (name == "Ftrl" || name == "Adadelta") return 0.5;
  return 0.05;
}

OptimizerPtr make(const std::string& name) {
  OptimizerPtr opt = get(name);
  opt->set_learning_rate(learning_rate_for(name));
  return opt;
}

std::shared_ptr<Sequential> mlp() {
  return std::make_shared<Sequential>(
      std::vector<SequentialEntry>{layers::Input({5}), layers::Dense(4, {.activation = "relu"}), layers::Dense(2)});
}

}  // namespace

TEST_CASE("every optimizer is registered", "[optimizers]") {
  const std::vector<std::string> names = plain_optimizers();
  for (const char* cls : {"SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "Nadam", "Lion", "Ftrl",
                          "Lamb", "Adafactor", "Muon", "ScheduleFreeAdamW"})
    CHECK(std::count(names.begin(), names.end(), cls) == 1);
}

TEST_CASE("every optimizer trains a model through compile, fit and evaluate", "[optimizers]") {
  for (const std::string& name : plain_optimizers()) {
    INFO(name);
    random::set_seed(11);  // the same initial weights every run (unseeded, Ftrl's loss rose for some)
    auto model = std::make_shared<Sequential>(
        std::vector<SequentialEntry>{layers::Input({3}), layers::Dense(8, {.activation = "relu"}), layers::Dense(1)});
    model->compile({.optimizer = make(name), .loss = "mse"});
    const Tensor x = random::uniform({32, 3}, {.seed = 3});
    const Tensor y = ops::reduce_sum(x, {-1}, true);
    const double first = model->evaluate(x, y, {.verbose = 0}).at("loss");
    model->fit(x, y, {.batch_size = 8, .epochs = 5, .verbose = 0});
    const double last = model->evaluate(x, y, {.verbose = 0}).at("loss");
    CHECK(last < first);
  }
}

TEST_CASE("every optimizer's state round-trips through .weights.h5", "[optimizers][io]") {
  TempDir dir("optimizer_state");
  const Tensor x = random::uniform({6, 5}, {.seed = 1}), y = random::uniform({6, 2}, {.seed = 2});
  for (const std::string& name : plain_optimizers()) {
    INFO(name);
    auto a = mlp(), b = mlp();
    a->compile({.optimizer = make(name), .loss = "mse"});
    b->compile({.optimizer = make(name), .loss = "mse"});
    b->optimizer().set_learning_rate(learning_rate_for(name) * 10);  // the checkpoint must restore it
    a->train_on_batch(x, y);
    a->train_on_batch(x, y);
    const std::string path = dir.file(name + ".weights.h5");
    a->save_weights(path);
    b->load_weights(path);
    const std::vector<Variable> va = a->optimizer().variables(), vb = b->optimizer().variables();
    REQUIRE(vb.size() == va.size());
    for (size_t i = 0; i < va.size(); ++i) {
      INFO(va[i].name());
      CHECK(vb[i].dtype() == va[i].dtype());
      CHECK(values_as_double(vb[i].value()) == values_as_double(va[i].value()));
    }
    a->train_on_batch(x, y);
    b->train_on_batch(x, y);
    const std::vector<Tensor> wa = a->get_weights(), wb = b->get_weights();
    REQUIRE(wa.size() == wb.size());
    for (size_t i = 0; i < wa.size(); ++i) CHECK(values_as_double(wa[i]) == values_as_double(wb[i]));
  }
}
