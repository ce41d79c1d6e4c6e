// AUC (keras/src/metrics/confusion_metrics.py), single- and multi-label.
#include "framework/model/metrics/auc.h"

#include <algorithm>

#include "framework/core/config_reader.h"
#include "framework/core/error.h"
#include "framework/model/metrics/confusion_matrix.h"
#include "framework/model/metrics/metrics.h"
#include "framework/ops/array.h"
#include "framework/ops/creation.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "framework/ops/tensor_helpers.h"

namespace ember::metrics {

namespace {

constexpr double kAucEpsilon = 1e-7;

std::string canonical_curve(const std::string& c) {
  if (c == "ROC" || c == "roc") return "ROC";
  if (c == "PR" || c == "pr") return "PR";
  if (c == "PRGAIN" || c == "prgain") return "PRGAIN";
  throw InvalidArgument("AUC: invalid curve \"" + c + "\"; expected one of \"PR\", \"ROC\", \"PRGAIN\"");
}

std::string canonical_summation(const std::string& s) {
  for (const char* m : {"interpolation", "majoring", "minoring"}) {
    std::string cap(m);
    cap[0] = static_cast<char>(cap[0] - 'a' + 'A');
    if (s == m || s == cap) return m;
  }
  throw InvalidArgument("AUC: invalid summation_method \"" + s +
                        "\"; expected one of \"interpolation\", \"majoring\", \"minoring\"");
}

// v[0 : n - 1] and v[1 : n] along the thresholds axis (the first), keeping any label axis.
Tensor threshold_rows(const Tensor& v, int64_t first) {
  std::vector<int64_t> begin(static_cast<size_t>(v.rank()), 0), size(static_cast<size_t>(v.rank()), -1);
  begin[0] = first;
  size[0] = v.shape()[0] - 1;
  return ops::slice(v, begin, size);
}
Tensor head(const Tensor& v) { return threshold_rows(v, 0); }
Tensor tail(const Tensor& v) { return threshold_rows(v, 1); }

// label_weights as Keras configs hold them: a list of numbers, or the tensor Keras's get_config returns as
// serialize_keras_object writes it ({"class_name": "__tensor__", "config": {"value": [...], "dtype": ...}};
// "__numpy__" for an array).
std::optional<std::vector<double>> config_label_weights(const nlohmann::json& c) {
  auto it = c.find("label_weights");
  if (it == c.end() || it->is_null()) return std::nullopt;
  const nlohmann::json* values = &*it;
  if (it->is_object()) {
    const auto cls = it->find("class_name");
    const auto inner = it->find("config");
    const bool tensor = cls != it->end() && cls->is_string() &&
                        (*cls == "__tensor__" || *cls == "__numpy__") && inner != it->end() && inner->is_object() &&
                        inner->contains("value");
    EMBER_CHECK(tensor, InvalidArgument)
        << "AUC: config \"label_weights\" must be a list of numbers or a serialized tensor "
           "({\"class_name\": \"__tensor__\", \"config\": {\"value\": [...]}}), got "
        << it->dump();
    values = &inner->at("value");
  }
  bool numbers = values->is_array();
  if (numbers)
    for (const auto& v : *values) numbers = numbers && v.is_number();
  EMBER_CHECK(numbers, InvalidArgument) << "AUC: config \"label_weights\" must be a list of numbers, got " << it->dump();
  return values->get<std::vector<double>>();
}

[[maybe_unused]] const bool auc_registered = [] {
  detail::register_metric("AUC", [](const nlohmann::json& c) -> MetricPtr {
    using ::ember::detail::config_bool;
    using ::ember::detail::config_string;
    const char* who = "AUC";
    AUCOptions o;
    o.name = detail::read_metric_base(c, who, "auc",
                                      {"num_thresholds", "curve", "summation_method", "thresholds", "multi_label",
                                       "num_labels", "label_weights", "from_logits"});
    o.multi_label = config_bool(c, "multi_label", false, who);
    o.num_labels = ::ember::detail::config_optional_int(c, "num_labels", who);
    o.label_weights = config_label_weights(c);
    o.curve = config_string(c, "curve", "ROC", who);
    o.summation_method = config_string(c, "summation_method", "interpolation", who);
    o.from_logits = config_bool(c, "from_logits", false, who);
    auto t = c.find("thresholds");
    if (t != c.end() && !t->is_null()) {
      EMBER_CHECK(t->is_array(), InvalidArgument) << "AUC: config \"thresholds\" must be a list, got " << t->dump();
      o.thresholds = t->get<std::vector<double>>();
    } else {
      o.num_thresholds = ::ember::detail::config_int(c, "num_thresholds", 200, who);
    }
    return std::make_shared<AUC>(o);
  }, {"auc"});
  return true;
}();

}  // namespace

AUC::AUC(AUCOptions options) : Metric(options.name.empty() ? "auc" : options.name), options_(std::move(options)) {
  options_.curve = canonical_curve(options_.curve);
  options_.summation_method = canonical_summation(options_.summation_method);
  std::vector<double> inner;
  if (options_.thresholds) {
    inner = *options_.thresholds;
    std::sort(inner.begin(), inner.end());
    options_.thresholds = inner;
    std::vector<double> with_ends{0.0};
    with_ends.insert(with_ends.end(), inner.begin(), inner.end());
    with_ends.push_back(1.0);
    evenly_ = detail::is_evenly_distributed_thresholds(with_ends);
  } else {
    EMBER_CHECK(options_.num_thresholds > 1, InvalidArgument)
        << "AUC: num_thresholds must be an integer > 1, got " << options_.num_thresholds;
    const int64_t n = options_.num_thresholds;
    for (int64_t i = 0; i < n - 2; ++i) inner.push_back(static_cast<double>(i + 1) * 1.0 / static_cast<double>(n - 1));
    evenly_ = true;
  }
  // End points just outside [0, 1], so that predictions of exactly 0 and 1 are counted correctly.
  thresholds_.push_back(0.0 - kAucEpsilon);
  thresholds_.insert(thresholds_.end(), inner.begin(), inner.end());
  thresholds_.push_back(1.0 + kAucEpsilon);
  options_.num_thresholds = static_cast<int64_t>(thresholds_.size());

  // Keras treats num_labels=0 as None (`if num_labels:`), and writes it back as given.
  const int64_t labels = options_.num_labels.value_or(0);
  EMBER_CHECK(labels >= 0, InvalidArgument) << "AUC '" << name() << "': num_labels must be a positive integer (or 0 for none), got " << labels;
  EMBER_CHECK(options_.multi_label || labels == 0, InvalidArgument)
      << "AUC '" << name() << "': num_labels is needed only when multi_label is true, got num_labels=" << labels
      << " with multi_label=false";
  if (options_.label_weights) {
    const std::vector<float> w(options_.label_weights->begin(), options_.label_weights->end());  // Keras: float32
    label_weights_ = Tensor::from_vector<float>(w, Shape{static_cast<int64_t>(w.size())}, Device::cpu());
    EMBER_CHECK(labels == 0 || static_cast<int64_t>(w.size()) == labels, InvalidArgument)
        << "AUC '" << name() << "': label_weights of shape " << label_weights_.shape() << " for num_labels=" << labels
        << "; expected shape (" << labels << ",), one weight per label";
  }
  if (!options_.multi_label) build(0);
  else if (labels > 0) build(labels);
}

void AUC::build(int64_t labels) {
  const Shape shape = options_.multi_label ? Shape{options_.num_thresholds, labels} : Shape{options_.num_thresholds};
  true_positives_ = add_variable("true_positives", shape);
  false_positives_ = add_variable("false_positives", shape);
  true_negatives_ = add_variable("true_negatives", shape);
  false_negatives_ = add_variable("false_negatives", shape);
  num_labels_ = labels;
  built_ = true;
}

void AUC::update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  const std::string who = "AUC '" + name() + "'";
  EMBER_CHECK(y_pred.defined(), InvalidArgument) << who << ": y_pred is an undefined tensor";
  if (options_.multi_label) {
    // Keras builds the [T, labels] state from the first y_pred (rank 2 required) and adds later batches to
    // it; a batch with another label count is refused here (Keras would fail or broadcast it).
    EMBER_CHECK(y_pred.rank() == 2, InvalidArgument)
        << who << ": with multi_label, y_pred must have rank 2 (samples, labels), got shape " << y_pred.shape();
    const int64_t labels = y_pred.shape()[1];
    if (!built_) {
      EMBER_CHECK(!label_weights_.defined() || label_weights_.shape()[0] == labels, InvalidArgument)
          << who << ": label_weights of shape " << label_weights_.shape() << " for y_pred of shape " << y_pred.shape()
          << "; expected shape (" << labels << ",), one weight per label";
      build(labels);
    }
    EMBER_CHECK(labels == num_labels_, InvalidArgument)
        << who << ": y_pred of shape " << y_pred.shape() << " has " << labels << " labels, but the state holds "
        << num_labels_ << "; expected shape (batch, " << num_labels_ << ")";
  }
  const Tensor pred = options_.from_logits ? ops::sigmoid(ops::to_float32(y_pred)) : y_pred;
  // Multi-label: the label weights weight the mean of the label AUCs (result), not the counts.
  detail::update_confusion_matrix_variables(
      {.true_positives = &true_positives_, .false_positives = &false_positives_, .true_negatives = &true_negatives_,
       .false_negatives = &false_negatives_},
      y_true, pred, thresholds_, evenly_, sample_weight, std::nullopt, std::nullopt, who, options_.multi_label,
      options_.multi_label ? Tensor() : label_weights_);
}

Tensor AUC::sum_terms(const Tensor& terms) const {
  if (!options_.multi_label) return ops::reduce_sum(terms);
  const Tensor by_label = ops::reduce_sum(terms, 0);
  if (!label_weights_.defined()) return ops::reduce_mean(by_label);
  const Tensor w = label_weights_.to(by_label.device());
  return ops::div_no_nan(ops::reduce_sum(by_label * w), ops::reduce_sum(w));
}

Tensor AUC::interpolate_pr_auc() const {
  const Tensor& tp = true_positives_.value();
  const Tensor& fp = false_positives_.value();
  const Tensor& fn = false_negatives_.value();
  const Tensor zero = ops::f32(0);
  const Tensor dtp = head(tp) - tail(tp);
  const Tensor p = tp + fp;
  const Tensor dp = head(p) - tail(p);
  const Tensor prec_slope = ops::div_no_nan(dtp, ops::maximum(dp, zero));
  const Tensor intercept = tail(tp) - prec_slope * tail(p);
  const Tensor safe_p_ratio =
      ops::where(ops::logical_and(ops::greater(head(p), zero), ops::greater(tail(p), zero)),
                 ops::div_no_nan(head(p), ops::maximum(tail(p), zero)), ops::ones_like(tail(p)));
  const Tensor increment = ops::div_no_nan(prec_slope * (dtp + intercept * ops::log(safe_p_ratio)),
                                         ops::maximum(tail(tp) + tail(fn), zero));
  return sum_terms(increment);
}

Tensor AUC::result() const {
  if (!built_) return ops::f32(0);  // a multi-label AUC before its first update (Keras has no state to read yet)
  const std::string& curve = options_.curve;
  const std::string& method = options_.summation_method;
  if (curve == "PR" && method == "interpolation") return interpolate_pr_auc();
  const Tensor& tp = true_positives_.value();
  const Tensor& fp = false_positives_.value();
  const Tensor& tn = true_negatives_.value();
  const Tensor& fn = false_negatives_.value();
  Tensor x, y;
  if (curve == "ROC") {
    x = ops::div_no_nan(fp, fp + tn);
    y = ops::div_no_nan(tp, tp + fn);
  } else if (curve == "PR") {
    x = ops::div_no_nan(tp, tp + fn);
    y = ops::div_no_nan(tp, tp + fp);
  } else {  // PRGAIN
    const Tensor scaling = ops::div_no_nan(tp + fn, tn + fp);
    const Tensor no_tp = ops::equal(tp, ops::f32(0));
    Tensor recall_gain = 1.0 - scaling * ops::div_no_nan(fn, tp);
    Tensor precision_gain = 1.0 - scaling * ops::div_no_nan(fp, tp);
    recall_gain = ops::maximum(ops::where(no_tp, ops::f32(0), recall_gain), ops::f32(0));
    precision_gain = ops::where(no_tp, ops::f32(1), precision_gain);
    x = recall_gain;
    y = precision_gain;
  }
  Tensor heights;
  if (method == "interpolation")
    heights = (head(y) + tail(y)) / 2.0;
  else if (method == "minoring")
    heights = ops::minimum(head(y), tail(y));
  else
    heights = ops::maximum(head(y), tail(y));
  return sum_terms((head(x) - tail(x)) * heights);
}

nlohmann::json AUC::get_config() const {
  nlohmann::json c = Metric::get_config();
  c["num_thresholds"] = options_.num_thresholds;
  c["curve"] = options_.curve;
  c["summation_method"] = options_.summation_method;
  c["multi_label"] = options_.multi_label;
  c["num_labels"] = options_.num_labels ? nlohmann::json(*options_.num_labels) : nlohmann::json(nullptr);
  if (label_weights_.defined()) {
    // Keras keeps label_weights as a float32 tensor, which its serialization writes this way.
    std::vector<double> w;
    for (float v : label_weights_.to_vector<float>()) w.push_back(v);
    c["label_weights"] = {{"class_name", "__tensor__"}, {"config", {{"value", w}, {"dtype", "float32"}}}};
  } else {
    c["label_weights"] = nullptr;
  }
  c["from_logits"] = options_.from_logits;
  if (options_.thresholds) c["thresholds"] = *options_.thresholds;
  return c;
}

}  // namespace ember::metrics
