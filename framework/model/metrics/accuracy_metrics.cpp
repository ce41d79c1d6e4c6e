// Accuracy, BinaryAccuracy, CategoricalAccuracy, SparseCategoricalAccuracy
// (keras/src/metrics/accuracy_metrics.py).
#include "framework/model/metrics/accuracy_metrics.h"

#include "framework/core/config_reader.h"
#include "framework/core/error.h"
#include "framework/model/metrics/metrics.h"
#include "framework/ops/array.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "framework/ops/tensor_helpers.h"

namespace ember::metrics {

namespace {

// The two compared tensors must have equal shapes (Keras would broadcast them; a mismatch is a label
// format mistake), else InvalidArgument naming the metric and the shapes it was given.
void check_comparable(const char* who, const Tensor& a, const Tensor& b, const Tensor& y_true, const Tensor& y_pred,
                      const char* hint) {
  EMBER_CHECK(a.shape() == b.shape(), InvalidArgument)
      << who << ": y_true has shape " << y_true.shape() << " but y_pred has shape " << y_pred.shape() << "; " << hint;
}

Tensor matches(const Tensor& a, const Tensor& b) { return ops::to_float32(ops::equal(a, b)); }

template <class M>
MetricPtr make_plain(const nlohmann::json& c, const char* cls, const char* default_name) {
  return std::make_shared<M>(MetricOptions{.name = detail::read_metric_base(c, cls, default_name)});
}

[[maybe_unused]] const bool accuracy_metrics_registered = [] {
  detail::register_metric("Accuracy", [](const nlohmann::json& c) {
    return make_plain<Accuracy>(c, "Accuracy", "accuracy");
  });  // "accuracy" itself is resolved by get() as compile does
  detail::register_metric("BinaryAccuracy", [](const nlohmann::json& c) -> MetricPtr {
    const std::string name = detail::read_metric_base(c, "BinaryAccuracy", "binary_accuracy", {"threshold"});
    return std::make_shared<BinaryAccuracy>(BinaryAccuracyOptions{
        .name = name, .threshold = ::ember::detail::config_double(c, "threshold", 0.5, "BinaryAccuracy")});
  }, {"binary_accuracy"});
  detail::register_metric("CategoricalAccuracy", [](const nlohmann::json& c) {
    return make_plain<CategoricalAccuracy>(c, "CategoricalAccuracy", "categorical_accuracy");
  }, {"categorical_accuracy"});
  detail::register_metric("SparseCategoricalAccuracy", [](const nlohmann::json& c) {
    return make_plain<SparseCategoricalAccuracy>(c, "SparseCategoricalAccuracy", "sparse_categorical_accuracy");
  }, {"sparse_categorical_accuracy"});
  return true;
}();

}  // namespace

Tensor accuracy(const Tensor& y_true, const Tensor& y_pred) {
  auto [t, p] = ops::squeeze_or_expand_to_same_rank(ops::to_float32(y_true), ops::to_float32(y_pred));
  check_comparable("Accuracy", t, p, y_true, y_pred, "they must be equal (up to a trailing 1)");
  return matches(t, p);
}

Tensor binary_accuracy(const Tensor& y_true, const Tensor& y_pred, double threshold) {
  auto [t, p] = ops::squeeze_or_expand_to_same_rank(ops::to_float32(y_true), ops::to_float32(y_pred));
  check_comparable("BinaryAccuracy", t, p, y_true, y_pred, "they must be equal (up to a trailing 1)");
  return matches(t, ops::to_float32(ops::greater(p, ops::f32(threshold))));
}

Tensor categorical_accuracy(const Tensor& y_true, const Tensor& y_pred) {
  EMBER_CHECK(y_true.rank() >= 1 && y_pred.rank() >= 1, InvalidArgument)
      << "CategoricalAccuracy: y_true and y_pred must be at least rank 1, got shapes " << y_true.shape() << " and "
      << y_pred.shape();
  Tensor t = ops::to_float32(ops::argmax(y_true, -1));
  const Shape original = t.shape();
  bool reshape = false;
  if (t.rank() == y_pred.rank()) {  // y_true had an extra trailing axis: (N, C, 1) against (N, C)
    EMBER_CHECK(t.shape()[t.rank() - 1] == 1, InvalidArgument)
        << "CategoricalAccuracy: y_true has shape " << y_true.shape() << " but y_pred has shape " << y_pred.shape()
        << "; one-hot y_true must have y_pred's shape";
    t = ops::squeeze(t, {-1});
    reshape = true;
  }
  const Tensor p = ops::to_float32(ops::argmax(y_pred, -1));
  check_comparable("CategoricalAccuracy", t, p, y_true, y_pred,
                   "one-hot y_true must have y_pred's shape (for integer labels use SparseCategoricalAccuracy)");
  Tensor m = matches(t, p);
  return reshape ? ops::reshape(m, original) : m;
}

Tensor sparse_categorical_accuracy(const Tensor& y_true, const Tensor& y_pred) {
  EMBER_CHECK(y_pred.rank() >= 1, InvalidArgument)
      << "SparseCategoricalAccuracy: y_pred must be at least rank 1 (..., num_classes), got shape " << y_pred.shape();
  Tensor t = ops::to_float32(y_true);
  const Shape original = t.shape();
  bool reshape = false;
  if (t.rank() == y_pred.rank() && t.rank() > 0 && t.shape()[t.rank() - 1] == 1) {
    t = ops::squeeze(t, {-1});
    reshape = true;
  }
  const Tensor p = ops::to_float32(ops::argmax(y_pred, -1));
  check_comparable("SparseCategoricalAccuracy", t, p, y_true, y_pred,
                   "integer labels must have y_pred's shape without its class axis (for one-hot labels use "
                   "CategoricalAccuracy)");
  Tensor m = matches(t, p);
  if (reshape) m = ops::reshape(m, original);
  if (m.rank() > 1 && m.shape()[m.rank() - 1] == 1) m = ops::squeeze(m, {-1});
  return m;
}

Accuracy::Accuracy(MetricOptions options) : MeanMetricWrapper(options.name.empty() ? "accuracy" : options.name) {}
Tensor Accuracy::values(const Tensor& y_true, const Tensor& y_pred) const { return accuracy(y_true, y_pred); }

BinaryAccuracy::BinaryAccuracy(BinaryAccuracyOptions options)
    : MeanMetricWrapper(options.name.empty() ? "binary_accuracy" : options.name), threshold_(options.threshold) {}
Tensor BinaryAccuracy::values(const Tensor& y_true, const Tensor& y_pred) const {
  return binary_accuracy(y_true, y_pred, threshold_);
}
nlohmann::json BinaryAccuracy::get_config() const {
  nlohmann::json c = Metric::get_config();
  c["threshold"] = threshold_;
  return c;
}

CategoricalAccuracy::CategoricalAccuracy(MetricOptions options)
    : MeanMetricWrapper(options.name.empty() ? "categorical_accuracy" : options.name) {}
Tensor CategoricalAccuracy::values(const Tensor& y_true, const Tensor& y_pred) const {
  return categorical_accuracy(y_true, y_pred);
}

SparseCategoricalAccuracy::SparseCategoricalAccuracy(MetricOptions options)
    : MeanMetricWrapper(options.name.empty() ? "sparse_categorical_accuracy" : options.name) {}
Tensor SparseCategoricalAccuracy::values(const Tensor& y_true, const Tensor& y_pred) const {
  return sparse_categorical_accuracy(y_true, y_pred);
}

}  // namespace ember::metrics
