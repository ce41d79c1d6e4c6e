#pragma once
// R2Score (Keras: keras.metrics.R2Score): the coefficient of determination 1 - SS_res / SS_tot per
// output column of (batch, outputs) data, accumulated over batches, then aggregated; optionally
// adjusted for the number of regressors.
#include <optional>

#include "framework/model/metrics/metric.h"

namespace ember::metrics {

struct R2ScoreOptions {
  // "uniform_average" (the mean of the column scores), "variance_weighted_average" (weighted by each
  // column's total sum of squares), or none (one score per column).
  std::optional<std::string> class_aggregation = "uniform_average";
  // > 0: the adjusted R2, 1 - (1 - R2) (n - 1) / (n - p - 1), with n the number of entries seen (Keras
  // counts every element of y_true) and p this; when p >= n - 1 the plain score, with a warning.
  int64_t num_regressors = 0;
  std::string name = {};  // empty: "r2_score"
};

// State: num_samples, then (at the first update, one entry per output column) squared_sum, sum,
// residual, count. A column's score is 0 where SS_tot is 0 and SS_res is not (Keras's inf -> 0),
// NaN where both are 0. Before the first update result() is 0 (Keras has no state to read yet).
class R2Score : public Metric {
 public:
  explicit R2Score(R2ScoreOptions options = {});
  Tensor result() const override;
  std::string class_name() const override { return "R2Score"; }
  std::string direction() const override { return "up"; }
  nlohmann::json get_config() const override;

 protected:
  void update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override;

 private:
  R2ScoreOptions options_;
  bool built_ = false;
  int64_t num_outputs_ = 0;
  mutable bool warned_ = false;
  Variable num_samples_, squared_sum_, sum_, residual_, count_;
};

}  // namespace ember::metrics
