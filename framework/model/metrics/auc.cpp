// AUC (keras/src/metrics/confusion_metrics.py), single-label.
#include "framework/model/metrics/auc.h"

#include <algorithm>

#include "framework/core/error.h"
#include "framework/model/metrics/config_reader.h"
#include "framework/model/metrics/confusion_matrix.h"
#include "framework/model/metrics/metrics.h"
#include "framework/model/metrics/metrics_utils.h"
#include "framework/ops/array.h"
#include "framework/ops/creation.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"

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

// v[0 : n - 1] and v[1 : n].
Tensor head(const Tensor& v) { return ops::slice(v, {0}, {v.shape()[0] - 1}); }
Tensor tail(const Tensor& v) { return ops::slice(v, {1}, {v.shape()[0] - 1}); }

[[maybe_unused]] const bool auc_registered = [] {
  detail::register_metric("AUC", [](const nlohmann::json& c) -> MetricPtr {
    using ::ember::detail::config_bool;
    using ::ember::detail::config_string;
    const char* who = "AUC";
    AUCOptions o;
    o.name = detail::read_metric_base(c, who, "auc",
                                      {"num_thresholds", "curve", "summation_method", "thresholds", "multi_label",
                                       "num_labels", "label_weights", "from_logits"});
    EMBER_CHECK(!config_bool(c, "multi_label", false, who) && (!c.contains("num_labels") || c["num_labels"].is_null()) &&
                    (!c.contains("label_weights") || c["label_weights"].is_null()),
                InvalidArgument)
        << "AUC: multi_label, num_labels and label_weights are not supported (config " << c.dump() << ")";
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

  const Shape shape{options_.num_thresholds};
  true_positives_ = add_variable("true_positives", shape);
  false_positives_ = add_variable("false_positives", shape);
  true_negatives_ = add_variable("true_negatives", shape);
  false_negatives_ = add_variable("false_negatives", shape);
}

void AUC::update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  EMBER_CHECK(y_pred.defined(), InvalidArgument) << "AUC '" << name() << "': y_pred is an undefined tensor";
  const Tensor pred = options_.from_logits ? ops::sigmoid(to_float32(y_pred)) : y_pred;
  detail::update_confusion_matrix_variables(
      {.true_positives = &true_positives_, .false_positives = &false_positives_, .true_negatives = &true_negatives_,
       .false_negatives = &false_negatives_},
      y_true, pred, thresholds_, evenly_, sample_weight, std::nullopt, std::nullopt, "AUC '" + name() + "'");
}

Tensor AUC::interpolate_pr_auc() const {
  const Tensor& tp = true_positives_.value();
  const Tensor& fp = false_positives_.value();
  const Tensor& fn = false_negatives_.value();
  const Tensor zero = f32(0);
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
  return ops::reduce_sum(increment);
}

Tensor AUC::result() const {
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
    const Tensor no_tp = ops::equal(tp, f32(0));
    Tensor recall_gain = 1.0 - scaling * ops::div_no_nan(fn, tp);
    Tensor precision_gain = 1.0 - scaling * ops::div_no_nan(fp, tp);
    recall_gain = ops::maximum(ops::where(no_tp, f32(0), recall_gain), f32(0));
    precision_gain = ops::where(no_tp, f32(1), precision_gain);
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
  return ops::reduce_sum((head(x) - tail(x)) * heights);
}

nlohmann::json AUC::get_config() const {
  nlohmann::json c = Metric::get_config();
  c["num_thresholds"] = options_.num_thresholds;
  c["curve"] = options_.curve;
  c["summation_method"] = options_.summation_method;
  c["multi_label"] = false;
  c["num_labels"] = nullptr;
  c["label_weights"] = nullptr;
  c["from_logits"] = options_.from_logits;
  if (options_.thresholds) c["thresholds"] = *options_.thresholds;
  return c;
}

}  // namespace ember::metrics
