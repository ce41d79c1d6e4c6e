#pragma once
// Helpers for the callback tests: a small compiled model, stdout/stderr capture, and weight comparison.
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "framework/ember.h"
#include "framework/model/callbacks/callbacks.h"

namespace ember::testing {

// A Dense(1) regression on 3 features, compiled with SGD (learning rate lr) and mse, plus metrics.
inline std::shared_ptr<Sequential> small_model(double lr = 0.01, std::vector<MetricArg> metrics = {}) {
  backend::clear_session();
  auto model = std::make_shared<Sequential>(std::vector<SequentialEntry>{layers::Input({3}), layers::Dense(1)});
  model->compile({.optimizer = optimizers::SGD({.learning_rate = lr}), .loss = "mse", .metrics = std::move(metrics)});
  return model;
}

// Redirects a stream (std::cout, std::cerr) into a string while alive.
class Capture {
 public:
  explicit Capture(std::ostream& stream) : stream_(stream), old_(stream.rdbuf(buffer_.rdbuf())) {}
  ~Capture() { stream_.rdbuf(old_); }
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;
  std::string str() const { return buffer_.str(); }

 private:
  std::ostream& stream_;
  std::ostringstream buffer_;
  std::streambuf* old_;
};

// Whether two weight lists hold exactly the same values.
inline bool same_weights(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].shape() != b[i].shape()) return false;
    std::vector<float> x = a[i].to_vector<float>(), y = b[i].to_vector<float>();
    if (x != y) return false;
  }
  return true;
}

// Moves every weight by delta, standing in for a training epoch.
inline void nudge_weights(Model& model, float delta) {
  for (Variable& v : model.weights()) v.assign_add(ops::ones_like(v.value()) * delta);
}

}  // namespace ember::testing
