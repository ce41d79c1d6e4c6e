#pragma once
// FBetaScore and F1Score (Keras: keras/src/metrics/f_score_metrics.py): the harmonic mean of precision
// and recall weighted by beta, (1 + beta^2) p r / (beta^2 p + r), for (batch, classes) data, per class
// or averaged.
#include <optional>

#include "framework/model/metrics/metric.h"

namespace ember::metrics {

struct FBetaScoreOptions {
  // none: one score per class; "micro": from the counts summed over classes; "macro": the mean of the
  // class scores; "weighted": their mean weighted by each class's (weighted) number of true labels.
  std::optional<std::string> average = {};
  double beta = 1.0;  // > 0
  // none: a prediction is positive where it is its row's maximum (and not 0); else where it is above
  // the threshold, in (0, 1].
  std::optional<double> threshold = {};
  std::string name = {};  // empty: "fbeta_score"
};

// State (built at the first update; per class, or scalars with "micro"): true_positives,
// false_positives, false_negatives, intermediate_weights. result() is one score per class without
// average, else a scalar; before the first update it is 0 (Keras has no state to read yet). A
// sample_weight has one weight per sample (rank 1).
class FBetaScore : public Metric {
 public:
  explicit FBetaScore(FBetaScoreOptions options = {});
  Tensor result() const override;
  std::string class_name() const override { return "FBetaScore"; }
  std::string direction() const override { return "up"; }
  // Keras's config: name, dtype, average, beta, threshold.
  nlohmann::json get_config() const override;

 protected:
  // who: the class named in argument errors.
  FBetaScore(FBetaScoreOptions options, const char* who);
  void update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override;

 private:
  FBetaScoreOptions options_;
  bool built_ = false;
  int64_t num_classes_ = 0;
  Variable true_positives_, false_positives_, false_negatives_, intermediate_weights_;
};

struct F1ScoreOptions {
  std::optional<std::string> average = {};  // as FBetaScore's
  std::optional<double> threshold = {};     // as FBetaScore's
  std::string name = {};                    // empty: "f1_score"
};

// FBetaScore with beta = 1. Its config has no "beta".
class F1Score : public FBetaScore {
 public:
  explicit F1Score(F1ScoreOptions options = {});
  std::string class_name() const override { return "F1Score"; }
  nlohmann::json get_config() const override;
};

}  // namespace ember::metrics
