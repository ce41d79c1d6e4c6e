// R2Score (keras/src/metrics/regression_metrics.py, adapted there from TF-Addons' RSquare).
#include "framework/model/metrics/r2_score.h"


#include "framework/core/config_reader.h"
#include "framework/core/error.h"
#include "framework/core/logging.h"
#include "framework/graph/trace.h"
#include "framework/model/metrics/metrics.h"
#include "framework/ops/array.h"
#include "framework/ops/broadcast.h"
#include "framework/ops/creation.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "framework/ops/tensor_helpers.h"

namespace ember::metrics {

namespace {

[[maybe_unused]] const bool r2_score_registered = [] {
  detail::register_metric("R2Score", [](const nlohmann::json& c) -> MetricPtr {
    const char* who = "R2Score";
    R2ScoreOptions o;
    o.name = detail::read_metric_base(c, who, "r2_score", {"class_aggregation", "num_regressors"});
    // Keras writes None as null: one score per output.
    auto it = c.find("class_aggregation");
    o.class_aggregation = it != c.end() && it->is_null()
                              ? std::nullopt
                              : std::optional<std::string>(::ember::detail::config_string(c, "class_aggregation",
                                                                                          "uniform_average", who));
    o.num_regressors = ::ember::detail::config_int(c, "num_regressors", 0, who);
    return std::make_shared<R2Score>(o);
  }, {"r2_score"});
  return true;
}();

}  // namespace

R2Score::R2Score(R2ScoreOptions options) : Metric(options.name.empty() ? "r2_score" : options.name), options_(std::move(options)) {
  const auto& agg = options_.class_aggregation;
  EMBER_CHECK(!agg || *agg == "uniform_average" || *agg == "variance_weighted_average", InvalidArgument)
      << "R2Score: invalid value for argument class_aggregation; expected one of none, \"uniform_average\", "
         "\"variance_weighted_average\", got \""
      << *agg << "\"";
  EMBER_CHECK(options_.num_regressors >= 0, InvalidArgument)
      << "R2Score: invalid value for argument num_regressors; expected a value >= 0, got " << options_.num_regressors;
  num_samples_ = add_variable("num_samples");
}

void R2Score::update(const Tensor& y_true_in, const Tensor& y_pred_in, const Tensor& sample_weight_in) {
  const std::string who = "R2Score '" + name() + "'";
  EMBER_CHECK(y_true_in.defined() && y_pred_in.defined(), InvalidArgument)
      << who << ": y_true and y_pred must be defined tensors";
  y_true_in.check_concrete(who.c_str());
  y_pred_in.check_concrete(who.c_str());
  auto [y_true, y_pred] = ops::squeeze_or_expand_to_same_rank(ops::to_float32(y_true_in), ops::to_float32(y_pred_in));
  EMBER_CHECK(y_true.rank() == 2 && y_pred.rank() == 2, InvalidArgument)
      << who << ": expects 2D inputs with shape (batch_size, output_dim); got y_pred of shape " << y_pred_in.shape()
      << " and y_true of shape " << y_true_in.shape();
  // Keras would broadcast other shapes against each other; a mismatch is a mistake here.
  EMBER_CHECK(y_true.shape() == y_pred.shape(), InvalidArgument)
      << who << ": y_true has shape " << y_true_in.shape() << " but y_pred has shape " << y_pred_in.shape()
      << "; they must be equal";
  const int64_t outputs = y_pred.shape()[1];
  if (!built_) {
    const Shape shape{outputs};
    squared_sum_ = add_variable("squared_sum", shape);
    sum_ = add_variable("sum", shape);
    residual_ = add_variable("residual", shape);
    count_ = add_variable("count", shape);
    num_outputs_ = outputs;
    built_ = true;
  }
  EMBER_CHECK(outputs == num_outputs_, InvalidArgument)
      << who << ": y_pred of shape " << y_pred_in.shape() << " has " << outputs << " outputs, but the state holds "
      << num_outputs_ << "; expected shape (batch, " << num_outputs_ << ")";

  // Weights: none is 1 (made on y_true's device); a rank-1 weight per sample gets the output axis; then
  // broadcast to y_true.
  Tensor sw = sample_weight_in.defined() ? ops::to_float32(sample_weight_in) : ops::ones_like(y_true);
  if (sw.rank() == 1) sw = ops::expand_dims(sw, 1);
  bool fits = sw.rank() <= 2;
  if (fits) {
    try {
      fits = broadcast_shapes("broadcast_to", sw.shape(), y_true.shape()) == y_true.shape();
    } catch (const InvalidArgument&) {
      fits = false;
    }
  }
  EMBER_CHECK(fits, InvalidArgument) << who << ": sample_weight of shape " << sample_weight_in.shape()
                                     << " does not broadcast to y_true of shape " << y_true.shape();
  if (sw.shape() != y_true.shape()) sw = ops::broadcast_to(sw, y_true.shape());

  const Tensor weighted_y_true = y_true * sw;
  sum_.assign_add(ops::reduce_sum(weighted_y_true, 0));
  squared_sum_.assign_add(ops::reduce_sum(y_true * weighted_y_true, 0));
  residual_.assign_add(ops::reduce_sum(ops::square(y_true - y_pred) * sw, 0));
  count_.assign_add(ops::reduce_sum(sw, 0));
  num_samples_.assign_add(ops::f32(static_cast<double>(y_true.num_elements())));
}

Tensor R2Score::result() const {
  if (!built_) return ops::f32(0);
  const Tensor sum = sum_.value();
  const Tensor mean = sum / count_.value();
  const Tensor total = squared_sum_.value() - sum * mean;
  Tensor raw = 1.0 - residual_.value() / total;
  // Keras: where(isinf(raw), 0, raw); NaN (0 / 0) stays.
  const Tensor is_inf = ops::logical_and(ops::logical_not(ops::is_finite(raw)), ops::equal(raw, raw));
  raw = ops::where(is_inf, ops::f32(0), raw);

  Tensor r2;
  if (options_.class_aggregation == "uniform_average")
    r2 = ops::reduce_mean(raw);
  else if (options_.class_aggregation == "variance_weighted_average")
    r2 = ops::reduce_sum(total * raw) / ops::reduce_sum(total);
  else
    r2 = raw;

  if (options_.num_regressors != 0) {
    // Keras decides on the host too (Python comparisons of the sample count): inside a traced step (fit's), a
    // host call that decides on every call.
    r2 = graph::host_call("r2_score_adjustment", {r2, num_samples_.value()}, [this](std::span<const Tensor> in) {
      const double n = in[1].item<float>();
      const double p = static_cast<double>(options_.num_regressors);
      if (p >= n - 1) {
        if (!warned_) {
          logging::warn(name() + ": " +
                        (p > n - 1 ? "More independent predictors than datapoints in adjusted R2 score."
                                   : "Division by zero in Adjusted R2 score.") +
                        " Falling back to standard R2 score.");
          warned_ = true;
        }
        return std::vector<Tensor>{in[0]};
      }
      const Tensor nt = ops::f32(n), pt = ops::f32(p);
      const Tensor num = (1.0 - in[0]) * (nt - 1.0);
      const Tensor den = (nt - pt) - 1.0;
      return std::vector<Tensor>{1.0 - num / den};
    })[0];
  }
  return r2;
}

nlohmann::json R2Score::get_config() const {
  nlohmann::json c = Metric::get_config();
  c["class_aggregation"] =
      options_.class_aggregation ? nlohmann::json(*options_.class_aggregation) : nlohmann::json(nullptr);
  c["num_regressors"] = options_.num_regressors;
  return c;
}

}  // namespace ember::metrics
