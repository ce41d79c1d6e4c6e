// The Metric base (keras/src/metrics/metric.py).
#include "framework/graph/trace.h"
#include "framework/model/metrics/metric.h"

#include "framework/autodiff/gradient_tape.h"
#include "framework/model/metrics/metrics.h"
#include "framework/ops/creation.h"

namespace ember::metrics {

void Metric::update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  NoRecordScope no_record;  // state updates are never part of a gradient
  update(y_true, y_pred, sample_weight);
}

// The zeros made with each variable (on its device: assign never moves a variable), shared by every reset
// (no op per variable: train_on_batch resets the metrics at every step). A variable never writes a value it
// shares in place.
void Metric::reset_state() {
  NoRecordScope no_record;
  for (size_t i = 0; i < variables_.size(); ++i) variables_[i].assign(zeros_[i]);
}

nlohmann::json Metric::get_config() const { return {{"name", name_}, {"dtype", "float32"}}; }

std::shared_ptr<Metric> Metric::clone() const {
  return deserialize({{"class_name", class_name()}, {"config", get_config()}});
}

Variable Metric::add_variable(const std::string& name, const Shape& shape) {
  NoRecordScope no_record;
  // Made at the first update, perhaps while a step is traced: the zeros are made once, outside the graph.
  graph::SuspendTracing untraced;
  zeros_.push_back(ops::zeros(shape, DType::Float32));
  Variable v(zeros_.back(), {.name = name_ + "/" + name, .trainable = false});
  variables_.push_back(v);
  return v;
}

}  // namespace ember::metrics
