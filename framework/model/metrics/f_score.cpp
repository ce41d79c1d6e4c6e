// FBetaScore and F1Score (keras/src/metrics/f_score_metrics.py).
#include "framework/model/metrics/f_score.h"

#include "framework/core/config_reader.h"
#include "framework/core/error.h"
#include "framework/model/metrics/metrics.h"
#include "framework/ops/array.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "framework/ops/tensor_helpers.h"

namespace ember::metrics {

namespace {

constexpr double kFScoreEpsilon = 1e-7;  // Keras's backend.epsilon()

// Keras insists on Python floats for beta and threshold (beta=1 is an error), so a config's integer (a
// JSON number written without a fraction or exponent) is refused.
std::optional<double> config_python_float(const nlohmann::json& c, const char* key, const char* who) {
  auto it = c.find(key);
  if (it == c.end() || it->is_null()) return std::nullopt;
  EMBER_CHECK(it->is_number_float(), InvalidArgument)
      << who << ": invalid " << key << " argument value; it should be a float, got " << it->dump();
  return it->get<double>();
}

std::optional<std::string> config_average(const nlohmann::json& c, const char* who) {
  auto it = c.find("average");
  if (it == c.end() || it->is_null()) return std::nullopt;
  return ::ember::detail::config_string(c, "average", "", who);
}

[[maybe_unused]] const bool f_score_registered = [] {
  detail::register_metric("FBetaScore", [](const nlohmann::json& c) -> MetricPtr {
    const char* who = "FBetaScore";
    FBetaScoreOptions o;
    o.name = detail::read_metric_base(c, who, "fbeta_score", {"average", "beta", "threshold"});
    o.average = config_average(c, who);
    o.beta = config_python_float(c, "beta", who).value_or(1.0);
    o.threshold = config_python_float(c, "threshold", who);
    return std::make_shared<FBetaScore>(o);
  }, {"f_beta_score"});
  detail::register_metric("F1Score", [](const nlohmann::json& c) -> MetricPtr {
    const char* who = "F1Score";
    F1ScoreOptions o;
    o.name = detail::read_metric_base(c, who, "f1_score", {"average", "threshold"});
    o.average = config_average(c, who);
    o.threshold = config_python_float(c, "threshold", who);
    return std::make_shared<F1Score>(o);
  }, {"f1_score"});
  return true;
}();

}  // namespace

FBetaScore::FBetaScore(FBetaScoreOptions options) : FBetaScore(std::move(options), "FBetaScore") {}

FBetaScore::FBetaScore(FBetaScoreOptions options, const char* who)
    : Metric(options.name.empty() ? "fbeta_score" : options.name), options_(std::move(options)) {
  const auto& avg = options_.average;
  EMBER_CHECK(!avg || *avg == "micro" || *avg == "macro" || *avg == "weighted", InvalidArgument)
      << who << ": invalid average argument value; expected one of none, \"micro\", \"macro\", \"weighted\", got \""
      << *avg << "\"";
  EMBER_CHECK(options_.beta > 0.0, InvalidArgument)
      << who << ": invalid beta argument value; it should be > 0, got " << options_.beta;
  if (options_.threshold) {
    const double t = *options_.threshold;
    EMBER_CHECK(t > 0.0 && t <= 1.0, InvalidArgument)
        << who << ": invalid threshold argument value; it should verify 0 < threshold <= 1, got " << t;
  }
}

void FBetaScore::update(const Tensor& y_true_in, const Tensor& y_pred_in, const Tensor& sample_weight_in) {
  const std::string who = class_name() + " '" + name() + "'";
  EMBER_CHECK(y_true_in.defined() && y_pred_in.defined(), InvalidArgument)
      << who << ": y_true and y_pred must be defined tensors";
  y_true_in.check_concrete(who.c_str());
  y_pred_in.check_concrete(who.c_str());
  // No squeeze or expand: Keras takes the shapes as they come.
  EMBER_CHECK(y_true_in.rank() == 2 && y_pred_in.rank() == 2, InvalidArgument)
      << who << ": expects 2D inputs with shape (batch_size, output_dim); got y_pred of shape " << y_pred_in.shape()
      << " and y_true of shape " << y_true_in.shape();
  // Keras would broadcast other shapes against each other; a mismatch is a mistake here.
  EMBER_CHECK(y_true_in.shape() == y_pred_in.shape(), InvalidArgument)
      << who << ": y_true has shape " << y_true_in.shape() << " but y_pred has shape " << y_pred_in.shape()
      << "; they must be equal";
  const int64_t classes = y_pred_in.shape()[1];
  const bool micro = options_.average == "micro";
  if (!built_) {
    const Shape shape = micro ? Shape{} : Shape{classes};
    true_positives_ = add_variable("true_positives", shape);
    false_positives_ = add_variable("false_positives", shape);
    false_negatives_ = add_variable("false_negatives", shape);
    intermediate_weights_ = add_variable("intermediate_weights", shape);
    num_classes_ = classes;
    built_ = true;
  }
  EMBER_CHECK(micro || classes == num_classes_, InvalidArgument)
      << who << ": y_pred of shape " << y_pred_in.shape() << " has " << classes << " classes, but the state holds "
      << num_classes_ << "; expected shape (batch, " << num_classes_ << ")";
  Tensor sample_weight;
  if (sample_weight_in.defined()) {
    // Keras multiplies by expand_dims(sample_weight, 1): one weight per sample (other shapes broadcast
    // into nonsense there).
    EMBER_CHECK(sample_weight_in.rank() == 1 && sample_weight_in.shape()[0] == y_pred_in.shape()[0], InvalidArgument)
        << who << ": sample_weight of shape " << sample_weight_in.shape() << " for y_pred of shape "
        << y_pred_in.shape() << "; expected one weight per sample, shape (" << y_pred_in.shape()[0] << ",)";
    sample_weight = ops::expand_dims(ops::to_float32(sample_weight_in), 1);
  }

  const Tensor y_pred_f = ops::to_float32(y_pred_in);
  Tensor positive;
  if (options_.threshold) {
    positive = ops::greater(y_pred_f, ops::f32(*options_.threshold));
  } else {
    // The row's maximum (every tied one), but never an all-zero row's zeros.
    const Tensor row_max = ops::reduce_max(y_pred_f, -1, /*keepdims=*/true);
    positive = ops::logical_and(ops::greater_equal(y_pred_f, row_max), ops::greater(ops::abs(y_pred_f), ops::f32(1e-9)));
  }
  const Tensor pred = ops::to_float32(positive);
  const Tensor truth = ops::to_float32(y_true_in);
  auto weighted_sum = [&](const Tensor& v) {
    const Tensor w = sample_weight.defined() ? v * sample_weight : v;
    return micro ? ops::reduce_sum(w) : ops::reduce_sum(w, 0);
  };
  true_positives_.assign_add(weighted_sum(pred * truth));
  false_positives_.assign_add(weighted_sum(pred * (1.0 - truth)));
  false_negatives_.assign_add(weighted_sum((1.0 - pred) * truth));
  intermediate_weights_.assign_add(weighted_sum(truth));
}

Tensor FBetaScore::result() const {
  if (!built_) return ops::f32(0);
  const Tensor eps = ops::f32(kFScoreEpsilon);
  const Tensor tp = true_positives_.value();
  const Tensor precision = tp / ((tp + false_positives_.value()) + eps);
  const Tensor recall = tp / ((tp + false_negatives_.value()) + eps);
  const double beta2 = options_.beta * options_.beta;  // Python's beta ** 2, then float32
  const Tensor mean = (precision * recall) / ((ops::f32(beta2) * precision + recall) + eps);
  Tensor score = mean * ops::f32(1.0 + beta2);
  if (options_.average == "weighted") {
    const Tensor iw = intermediate_weights_.value();
    score = ops::reduce_sum(score * (iw / (ops::reduce_sum(iw) + eps)));
  } else if (options_.average) {  // micro, macro
    score = ops::reduce_mean(score);
  }
  return score;
}

nlohmann::json FBetaScore::get_config() const {
  nlohmann::json c = Metric::get_config();
  c["average"] = options_.average ? nlohmann::json(*options_.average) : nlohmann::json(nullptr);
  c["beta"] = options_.beta;
  c["threshold"] = options_.threshold ? nlohmann::json(*options_.threshold) : nlohmann::json(nullptr);
  return c;
}

F1Score::F1Score(F1ScoreOptions options)
    : FBetaScore(FBetaScoreOptions{.average = std::move(options.average),
                                   .beta = 1.0,
                                   .threshold = options.threshold,
                                   .name = options.name.empty() ? "f1_score" : std::move(options.name)},
                 "F1Score") {}

nlohmann::json F1Score::get_config() const {
  nlohmann::json c = FBetaScore::get_config();
  c.erase("beta");
  return c;
}

}  // namespace ember::metrics
