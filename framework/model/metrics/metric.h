#pragma once
// Metric (Keras: keras.metrics.Metric): a stateful measure accumulated over batches. Its state lives in
// non-trainable float32 Variables; update_state runs outside every GradientTape and stays on the
// device (no host reads), result() is a float32 tensor (a scalar, or one value per threshold for
// Precision/Recall given several thresholds).
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/autodiff/variable.h"
#include "framework/core/tensor.h"

namespace ember::metrics {

class Metric {
 public:
  virtual ~Metric() = default;
  Metric(const Metric&) = delete;  // the state would be shared between copies; use clone()
  Metric& operator=(const Metric&) = delete;
  Metric(Metric&&) = default;
  Metric& operator=(Metric&&) = default;

  // Accumulates one batch (tapes paused). sample_weight is optional; Keras's rank rules apply.
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = {});
  // The current value from the accumulated state, float32.
  virtual Tensor result() const = 0;
  // Zeroes every state variable.
  virtual void reset_state();

  const std::string& name() const { return name_; }
  // Renames the metric (compile names metrics after their identifier: "acc", "mse"); variables keep
  // the names they were created with, as in Keras.
  void set_name(std::string name) { name_ = std::move(name); }
  // The state variables (non-trainable), in Keras's order.
  const std::vector<Variable>& variables() const { return variables_; }

  // The Keras class name ("SparseCategoricalAccuracy", ...).
  virtual std::string class_name() const = 0;
  // Keras's config: {"name", "dtype": "float32"} plus the subclass's options.
  virtual nlohmann::json get_config() const;
  // "up" when larger is better, "down" when smaller, "" when unknown (Keras's _direction, which
  // callbacks with mode="auto" consult).
  virtual std::string direction() const { return ""; }
  // A new metric of the same class and config, with fresh (zero) state.
  virtual std::shared_ptr<Metric> clone() const;

 protected:
  explicit Metric(std::string name) : name_(std::move(name)) {}
  // The batch update proper; update_state calls it with tapes paused.
  virtual void update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) = 0;
  // A float32 zero-initialised, non-trainable state variable named "<metric name>/<name>".
  Variable add_variable(const std::string& name, const Shape& shape = {});

 private:
  std::string name_;
  std::vector<Variable> variables_;
  std::vector<Tensor> zeros_;  // each variable's initial value, which reset_state assigns again
};

using MetricPtr = std::shared_ptr<Metric>;

}  // namespace ember::metrics
