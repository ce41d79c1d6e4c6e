// Mean, Sum and MeanMetricWrapper (keras/src/metrics/reduction_metrics.py).
#include "framework/model/metrics/reduction_metrics.h"

#include <numeric>

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/error.h"
#include "framework/model/layer.h"
#include "framework/model/metrics/metrics.h"
#include "framework/ops/array.h"
#include "framework/ops/broadcast.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "framework/ops/tensor_helpers.h"

namespace ember::metrics {

namespace {

std::vector<int64_t> axes_from(int64_t first, int64_t last) {
  std::vector<int64_t> axes(static_cast<size_t>(std::max<int64_t>(last - first, 0)));
  std::iota(axes.begin(), axes.end(), first);
  return axes;
}

Tensor reduce_samplewise(const Tensor& x, std::vector<int64_t> axes, bool use_sum) {
  return use_sum ? ops::reduce_sum(x, ops::Axes(std::move(axes))) : ops::reduce_mean(x, ops::Axes(std::move(axes)));
}

[[noreturn]] void values_only(const std::string& who) {
  throw InvalidArgument(who + " accumulates values: call update_state(values, sample_weight) on the " + who +
                        " itself; it has no update_state(y_true, y_pred, sample_weight)");
}

// reduce_sum(x) without an op for a scalar (the loss tracker's loss and batch size at every step).
Tensor sum_of(const Tensor& x) { return x.rank() == 0 ? x : ops::reduce_sum(x); }

[[maybe_unused]] const bool reduction_metrics_registered = [] {
  detail::register_metric("Mean", [](const nlohmann::json& c) -> MetricPtr {
    return std::make_shared<Mean>(MetricOptions{.name = detail::read_metric_base(c, "Mean", "mean")});
  }, {"mean"});
  detail::register_metric("Sum", [](const nlohmann::json& c) -> MetricPtr {
    return std::make_shared<Sum>(MetricOptions{.name = detail::read_metric_base(c, "Sum", "sum")});
  }, {"sum"});
  return true;
}();

}  // namespace

std::pair<Tensor, Tensor> reduce_to_samplewise_values(const Tensor& values_in, const Tensor& sample_weight_in,
                                                      bool use_sum, const std::string& who) {
  Tensor values = ops::to_float32(values_in);
  Tensor sample_weight;
  if (sample_weight_in.defined()) {
    auto [v, w] = ops::squeeze_or_expand_to_same_rank(values, ops::to_float32(sample_weight_in));
    const int64_t weight_ndim = w.rank();
    if (v.rank() > weight_ndim) v = reduce_samplewise(v, axes_from(weight_ndim, v.rank()), use_sum);
    // broadcast_to only widens the weights; weights of a larger rank or shape are an error.
    bool fits = w.rank() <= v.rank();
    if (fits) {
      try {
        fits = broadcast_shapes("broadcast_to", w.shape(), v.shape()) == v.shape();
      } catch (const InvalidArgument&) {
        fits = false;
      }
    }
    EMBER_CHECK(fits, InvalidArgument) << who << ": sample_weight of shape " << sample_weight_in.shape()
                                       << " does not broadcast to the per-sample values of shape " << values.shape();
    if (w.shape() != v.shape()) w = ops::broadcast_to(w, v.shape());
    values = v * w;
    sample_weight = weight_ndim > 1 ? reduce_samplewise(w, axes_from(1, weight_ndim), use_sum) : w;
  }
  if (values.rank() > 1) values = reduce_samplewise(values, axes_from(1, values.rank()), use_sum);
  return {values, sample_weight};
}

namespace detail {
void accumulate_mean(Variable& total, Variable& count, const Tensor& values, const Tensor& sample_weight,
                     const std::string& who) {
  auto [v, w] = reduce_to_samplewise_values(values, sample_weight, /*use_sum=*/false, who);
  total.assign_add(sum_of(v));
  if (w.defined())
    count.assign_add(sum_of(w));
  else
    count.assign_add(ops::f32(v.rank() >= 1 ? static_cast<double>(v.shape()[0]) : 1.0));
}
}  // namespace detail

Mean::Mean(MetricOptions options) : Metric(options.name.empty() ? "mean" : options.name) {
  total_ = add_variable("total");
  count_ = add_variable("count");
}

void Mean::update_state(const Tensor& values, const Tensor& sample_weight) {
  NoRecordScope no_record;
  EMBER_CHECK(values.defined(), InvalidArgument) << "Mean: values is an undefined tensor";
  detail::accumulate_mean(total_, count_, values, sample_weight, "Mean '" + name() + "'");
}

void Mean::update(const Tensor&, const Tensor&, const Tensor&) { values_only("Mean"); }

Tensor Mean::result() const { return ops::div_no_nan(total_.value(), count_.value()); }

Sum::Sum(MetricOptions options) : Metric(options.name.empty() ? "sum" : options.name) { total_ = add_variable("total"); }

void Sum::update_state(const Tensor& values, const Tensor& sample_weight) {
  NoRecordScope no_record;
  EMBER_CHECK(values.defined(), InvalidArgument) << "Sum: values is an undefined tensor";
  auto [v, w] = reduce_to_samplewise_values(values, sample_weight, /*use_sum=*/true, "Sum '" + name() + "'");
  total_.assign_add(sum_of(v));
}

void Sum::update(const Tensor&, const Tensor&, const Tensor&) { values_only("Sum"); }

Tensor Sum::result() const { return total_.value(); }

MeanMetricWrapper::MeanMetricWrapper(std::string name) : Metric(std::move(name)) {
  total_ = add_variable("total");
  count_ = add_variable("count");
}

void MeanMetricWrapper::update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  const std::string who = class_name() + " '" + name() + "'";
  EMBER_CHECK(y_true.defined() && y_pred.defined(), InvalidArgument)
      << who << ": y_true and y_pred must be defined tensors";
  y_true.check_concrete(who.c_str());
  y_pred.check_concrete(who.c_str());
  Tensor mask;
  const Tensor v = masked_values(y_true, y_pred, mask);
  Tensor weights = sample_weight;
  // Keras's MeanMetricWrapper: the mask beside y_pred (a model output's) becomes the weights, or multiplies them.
  if (const Tensor pred_mask = backend::get_keras_mask(y_pred); pred_mask.defined()) {
    if (weights.defined()) {
      auto [m, w] = ops::squeeze_or_expand_to_same_rank(ops::to_float32(pred_mask), ops::to_float32(weights));
      weights = w * m;
    } else {
      weights = ops::to_float32(pred_mask);
    }
  }
  if (mask.defined() && weights.defined()) {
    // Keras's apply_mask(reduction="sum"): the weights times the mask, after the squeeze/expand rule.
    auto [m, w] = ops::squeeze_or_expand_to_same_rank(ops::to_float32(mask), ops::to_float32(weights));
    try {
      (void)broadcast_shapes("multiply", m.shape(), w.shape());
    } catch (const InvalidArgument&) {
      throw InvalidArgument(who + ": sample_weight of shape " + weights.shape().to_string() +
                            " does not broadcast to the mask of shape " + mask.shape().to_string());
    }
    weights = w * m;
  }
  detail::accumulate_mean(total_, count_, v, weights, who);
}

Tensor MeanMetricWrapper::result() const { return ops::div_no_nan(total_.value(), count_.value()); }

}  // namespace ember::metrics
