#pragma once
// The data, models and checks that the distribution strategies' tests train with: a strategy's replicas must train
// as one replica on the whole global batch, up to the summation order of the gradients.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "framework/ember.h"

namespace ember::testing {

struct DistributeData {
  Tensor x, y;
};

inline DistributeData mlp_data() {
  random::set_seed(5);
  Tensor x = random::normal({256, 8});
  Tensor y = ops::cast(ops::argmax(ops::matmul(x, random::normal({8, 3})), -1), DType::Int64);
  return {x, y};
}

inline DistributeData cnn_data() {
  random::set_seed(6);
  Tensor x = random::normal({128, 8, 8, 1});
  Tensor y = ops::cast(ops::argmax(ops::matmul(ops::reshape(x, {128, 64}), random::normal({64, 3})), -1), DType::Int64);
  return {x, y};
}

inline std::shared_ptr<Sequential> mlp(uint64_t seed) {
  backend::clear_session();
  random::set_seed(seed);
  return std::make_shared<Sequential>(std::vector<SequentialEntry>{
      layers::Input({8}), layers::Dense(16, {.activation = "relu"}), layers::Dense(3)});
}

inline std::shared_ptr<Sequential> cnn(uint64_t seed) {
  backend::clear_session();
  random::set_seed(seed);
  return std::make_shared<Sequential>(std::vector<SequentialEntry>{
      layers::Input({8, 8, 1}), layers::Conv2D(4, 3, {.activation = "relu"}), layers::MaxPooling2D(2),
      layers::Flatten(), layers::Dense(3)});
}

inline void compile_for_distribute(Sequential& m, bool eager) {
  m.compile({.optimizer = optimizers::SGD({.learning_rate = 0.1, .momentum = 0.9}),
             .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
             .metrics = {"accuracy"},
             .run_eagerly = eager});
}

// Equal up to `tol`, relative to 1 + |b|: gradients averaged over replicas differ from those of the whole batch
// in their summation order only.
inline void check_close(const std::vector<Tensor>& a, const std::vector<Tensor>& b, double tol) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const std::vector<float> u = a[i].to_vector<float>(), v = b[i].to_vector<float>();
    REQUIRE(u.size() == v.size());
    double worst = 0;
    for (size_t k = 0; k < u.size(); ++k)
      worst = std::max(worst, std::abs(double(u[k]) - double(v[k])) / (1 + std::abs(double(v[k]))));
    INFO("tensor " << i);
    CHECK(worst < tol);
  }
}

}  // namespace ember::testing
