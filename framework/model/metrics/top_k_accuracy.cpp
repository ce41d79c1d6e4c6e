// TopKCategoricalAccuracy and SparseTopKCategoricalAccuracy (keras/src/metrics/accuracy_metrics.py) and
// TF's in_top_k (tensorflow/core/kernels/in_topk_op.h), built from eager ops.
#include "framework/model/metrics/top_k_accuracy.h"

#include "framework/core/config_reader.h"
#include "framework/core/error.h"
#include "framework/model/metrics/metrics.h"
#include "framework/ops/array.h"
#include "framework/ops/creation.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "framework/ops/tensor_helpers.h"

namespace ember::metrics {

namespace {

template <class M>
MetricPtr make_top_k(const nlohmann::json& c, const char* cls, const char* default_name) {
  const std::string name = detail::read_metric_base(c, cls, default_name, {"k", "from_sorted_ids"});
  EMBER_CHECK(!::ember::detail::config_bool(c, "from_sorted_ids", false, cls), InvalidArgument)
      << cls << ": from_sorted_ids=true is not supported";
  return std::make_shared<M>(TopKAccuracyOptions{.k = ::ember::detail::config_int(c, "k", 5, cls), .name = name});
}

[[maybe_unused]] const bool top_k_accuracy_registered = [] {
  detail::register_metric("TopKCategoricalAccuracy", [](const nlohmann::json& c) {
    return make_top_k<TopKCategoricalAccuracy>(c, "TopKCategoricalAccuracy", "top_k_categorical_accuracy");
  }, {"top_k_categorical_accuracy"});
  detail::register_metric("SparseTopKCategoricalAccuracy", [](const nlohmann::json& c) {
    return make_top_k<SparseTopKCategoricalAccuracy>(c, "SparseTopKCategoricalAccuracy", "sparse_top_k_categorical_accuracy");
  }, {"sparse_top_k_categorical_accuracy"});
  return true;
}();

void check_k(const char* who, int64_t k) {
  EMBER_CHECK(k >= 1, InvalidArgument) << who << ": k must be a positive integer, got " << k;
}

// Keras's flattening: predictions to [-1, C], labels to [-1]; the matches take the labels' shape back.
Tensor top_k_matches(const char* who, Tensor labels, Tensor pred, const Tensor& y_true, const Tensor& y_pred,
                     int64_t k) {
  EMBER_CHECK(pred.rank() >= 2, InvalidArgument)
      << who << ": y_pred must have shape (batch, num_classes) or more dimensions, got " << y_pred.shape();
  const Shape labels_shape = labels.shape();
  if (pred.rank() > 2) pred = ops::reshape(pred, Shape{-1, pred.shape()[pred.rank() - 1]});
  if (labels.rank() != 1) labels = ops::reshape(labels, Shape{-1});
  EMBER_CHECK(labels.shape()[0] == pred.shape()[0], InvalidArgument)
      << who << ": y_true has shape " << y_true.shape() << " but y_pred has shape " << y_pred.shape()
      << "; there must be one label per row of predictions";
  Tensor m = ops::to_float32(in_top_k(labels, pred, k));
  return labels_shape.rank() > 1 ? ops::reshape(m, labels_shape) : m;
}

}  // namespace

Tensor in_top_k(const Tensor& targets, const Tensor& predictions, int64_t k) {
  EMBER_CHECK(predictions.rank() == 2 && targets.rank() == 1 && targets.shape()[0] == predictions.shape()[0],
              InvalidArgument)
      << "in_top_k: expected targets [batch] and predictions [batch, classes], got " << targets.shape() << " and "
      << predictions.shape();
  const int64_t classes = predictions.shape()[1];
  const Tensor p = ops::to_float32(predictions);
  const Tensor t = targets.dtype() == DType::Int64 ? targets : ops::cast(targets, DType::Int64);
  const Tensor is_target = ops::equal(ops::expand_dims(t, -1), ops::range(0, static_cast<double>(classes), 1, DType::Int64));
  const Tensor in_range = ops::reduce_any(is_target, -1);
  const Tensor target_score = ops::reduce_sum(ops::where(is_target, p, ops::f32(0)), -1);
  const Tensor larger = ops::reduce_sum(ops::to_float32(ops::greater(p, ops::expand_dims(target_score, -1))), -1);
  return ops::logical_and(ops::logical_and(in_range, ops::is_finite(target_score)),
                          ops::less(larger, ops::f32(static_cast<double>(k))));
}

Tensor top_k_categorical_accuracy(const Tensor& y_true, const Tensor& y_pred, int64_t k) {
  const char* who = "TopKCategoricalAccuracy";
  check_k(who, k);
  EMBER_CHECK(y_true.shape() == y_pred.shape(), InvalidArgument)
      << who << ": y_true has shape " << y_true.shape() << " but y_pred has shape " << y_pred.shape()
      << "; one-hot y_true must have y_pred's shape (for integer labels use SparseTopKCategoricalAccuracy)";
  const Tensor labels = ops::cast(ops::argmax(ops::to_float32(y_true), -1), DType::Int32);
  return top_k_matches(who, labels, y_pred, y_true, y_pred, k);
}

Tensor sparse_top_k_categorical_accuracy(const Tensor& y_true, const Tensor& y_pred, int64_t k) {
  const char* who = "SparseTopKCategoricalAccuracy";
  check_k(who, k);
  const Tensor labels = y_true.dtype() == DType::Int32 ? y_true : ops::cast(y_true, DType::Int32);
  return top_k_matches(who, labels, y_pred, y_true, y_pred, k);
}

TopKCategoricalAccuracy::TopKCategoricalAccuracy(TopKAccuracyOptions options)
    : MeanMetricWrapper(options.name.empty() ? "top_k_categorical_accuracy" : options.name), k_(options.k) {
  check_k("TopKCategoricalAccuracy", k_);
}
Tensor TopKCategoricalAccuracy::values(const Tensor& y_true, const Tensor& y_pred) const {
  return top_k_categorical_accuracy(y_true, y_pred, k_);
}
nlohmann::json TopKCategoricalAccuracy::get_config() const {
  nlohmann::json c = Metric::get_config();
  c["k"] = k_;
  return c;
}

SparseTopKCategoricalAccuracy::SparseTopKCategoricalAccuracy(TopKAccuracyOptions options)
    : MeanMetricWrapper(options.name.empty() ? "sparse_top_k_categorical_accuracy" : options.name), k_(options.k) {
  check_k("SparseTopKCategoricalAccuracy", k_);
}
Tensor SparseTopKCategoricalAccuracy::values(const Tensor& y_true, const Tensor& y_pred) const {
  return sparse_top_k_categorical_accuracy(y_true, y_pred, k_);
}
nlohmann::json SparseTopKCategoricalAccuracy::get_config() const {
  nlohmann::json c = Metric::get_config();
  c["k"] = k_;
  return c;
}

}  // namespace ember::metrics
