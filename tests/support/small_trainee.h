#pragma once
// A small model's training step under Adam, for the graph tests that compare a traced step with eager's: an MLP
// (dense-relu, optionally dropout, dense) or a CNN (conv-relu-pool-dense); two made alike start with the same
// weights.
#include <memory>
#include <vector>

#include "framework/ember.h"

namespace ember::testing {

struct SmallTrainee {
  struct Options {
    bool cnn = false;
    bool dropout = true;  // the MLP's, after its hidden layer
  };
  std::unique_ptr<Sequential> model;
  optimizers::Adam opt{{.learning_rate = 1e-2}};
  losses::SparseCategoricalCrossentropy loss_fn{{.from_logits = true}};

  explicit SmallTrainee(Options o) {
    random::set_seed(11);
    model = std::make_unique<Sequential>();
    if (o.cnn) {
      model->add(layers::Input({8, 8, 2}));
      model->add(layers::Conv2D(4, {3, 3}, {.activation = "relu"}));
      model->add(layers::MaxPooling2D({2, 2}));
      model->add(layers::Flatten());
    } else {
      model->add(layers::Input({6}));
      model->add(layers::Dense(16, {.activation = "relu"}));
      if (o.dropout) model->add(layers::Dropout(0.25));
    }
    model->add(layers::Dense(3));
  }
  Tensor operator()(const Tensor& x, const Tensor& y) {
    std::vector<Variable> vars = model->trainable_weights();
    GradientTape tape;
    Tensor loss = loss_fn(y, (*model)(x, /*training=*/true));
    opt.apply(tape.gradient(loss, vars), vars);
    return loss;
  }
};

}  // namespace ember::testing
