#pragma once
// Mean and Sum of values (Keras: keras.metrics.Mean / Sum), and MeanMetricWrapper, the base of the
// metrics that average a per-sample function of (y_true, y_pred) (accuracies, MSE, MAE).
#include "framework/model/metrics/metric.h"

namespace ember::metrics {

struct MetricOptions {
  std::string name = {};  // empty: the class's Keras default name
};

// Keras's reduce_to_samplewise_values: values as float32 reduced (by mean, or sum when use_sum) to one
// value per sample and multiplied by sample_weight (after the squeeze/expand rank rule, and reduced
// to the same rank); returns the weighted values and the matching per-sample weights (undefined
// without sample_weight). `who` names the metric in errors.
std::pair<Tensor, Tensor> reduce_to_samplewise_values(const Tensor& values, const Tensor& sample_weight, bool use_sum,
                                                      const std::string& who);

// The weighted mean of every value seen: total = sum of weighted values, count = sum of weights (or
// of samples). Its update takes values: update_state(values, sample_weight).
class Mean : public Metric {
 public:
  explicit Mean(MetricOptions options = {});
  // Accumulates values (any shape; one value per sample after a mean over the other axes).
  void update_state(const Tensor& values, const Tensor& sample_weight = {});
  Tensor result() const override;
  std::string class_name() const override { return "Mean"; }

 protected:
  // Mean takes values, not (y_true, y_pred): through a Metric reference this throws InvalidArgument.
  void update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override;

 private:
  Variable total_, count_;
};

// The weighted sum of every value seen. Its update takes values: update_state(values, sample_weight).
class Sum : public Metric {
 public:
  explicit Sum(MetricOptions options = {});
  void update_state(const Tensor& values, const Tensor& sample_weight = {});
  Tensor result() const override;
  std::string class_name() const override { return "Sum"; }

 protected:
  void update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override;

 private:
  Variable total_;
};

// The mean of values(y_true, y_pred) over every sample seen (state "total" and "count", as Mean).
class MeanMetricWrapper : public Metric {
 public:
  Tensor result() const override;

 protected:
  explicit MeanMetricWrapper(std::string name);
  // The per-sample values (Keras's fn), float32.
  virtual Tensor values(const Tensor& y_true, const Tensor& y_pred) const = 0;
  // values() and the mask Keras's fn attaches to them (undefined: none; only a loss with ignore_class
  // has one). As in Keras's Mean, the mask matters only with sample weights: each weight is multiplied
  // by it (masked values weigh 0); without weights every value counts, the masked ones as they are.
  virtual Tensor masked_values(const Tensor& y_true, const Tensor& y_pred, Tensor& /*mask*/) const {
    return values(y_true, y_pred);
  }
  void update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override;

 private:
  Variable total_, count_;
};

namespace detail {
// total += sum of the weighted per-sample values; count += their weights (or the sample count).
void accumulate_mean(Variable& total, Variable& count, const Tensor& values, const Tensor& sample_weight,
                     const std::string& who);
}  // namespace detail

}  // namespace ember::metrics
