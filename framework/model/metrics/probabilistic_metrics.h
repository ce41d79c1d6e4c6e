#pragma once
// Probabilistic metrics (Keras: keras/src/metrics/probabilistic_metrics.py): the means over samples of
// the per-sample values of the losses of the same names (losses/), with the options Keras's metrics
// take. Every one is minimised (direction "down").
#include <optional>

#include "framework/model/metrics/loss_metric.h"

namespace ember::metrics {

struct BinaryCrossentropyOptions {
  bool from_logits = false;
  double label_smoothing = 0.0;  // in [0, 1]: labels become y * (1 - s) + 0.5 * s
  std::string name = {};         // empty: "binary_crossentropy"
};

// Binary crossentropy averaged over the last axis (losses::BinaryCrossentropy), then over samples.
class BinaryCrossentropy : public LossMeanMetric {
 public:
  explicit BinaryCrossentropy(BinaryCrossentropyOptions options = {});
  std::string class_name() const override { return "BinaryCrossentropy"; }
  std::string direction() const override { return "down"; }
  nlohmann::json get_config() const override;

 private:
  BinaryCrossentropyOptions options_;
};

struct CategoricalCrossentropyOptions {
  bool from_logits = false;
  double label_smoothing = 0.0;  // in [0, 1]: labels become y * (1 - s) + s / num_classes
  int64_t axis = -1;             // the class axis
  std::string name = {};         // empty: "categorical_crossentropy"
};

// -sum(y_true * log(y_pred)) over axis, for one-hot labels (losses::CategoricalCrossentropy).
class CategoricalCrossentropy : public LossMeanMetric {
 public:
  explicit CategoricalCrossentropy(CategoricalCrossentropyOptions options = {});
  std::string class_name() const override { return "CategoricalCrossentropy"; }
  std::string direction() const override { return "down"; }
  nlohmann::json get_config() const override;

 private:
  CategoricalCrossentropyOptions options_;
};

struct SparseCategoricalCrossentropyOptions {
  bool from_logits = false;
  // Labels equal to it give 0. As in Keras's metric, they still count in the mean without sample
  // weights; with sample weights their weight is 0.
  std::optional<int64_t> ignore_class = {};
  int64_t axis = -1;      // the class axis; only the last one (as Keras's TensorFlow backend)
  std::string name = {};  // empty: "sparse_categorical_crossentropy"
};

// -log p[label] for integer labels (losses::SparseCategoricalCrossentropy), averaged over samples.
class SparseCategoricalCrossentropy : public LossMeanMetric {
 public:
  explicit SparseCategoricalCrossentropy(SparseCategoricalCrossentropyOptions options = {});
  std::string class_name() const override { return "SparseCategoricalCrossentropy"; }
  std::string direction() const override { return "down"; }
  nlohmann::json get_config() const override;

 private:
  SparseCategoricalCrossentropyOptions options_;
};

// sum(y_true * log(y_true / y_pred)) over the last axis, both clipped to [1e-7, 1]
// (losses::KLDivergence), averaged over samples. Default name "kl_divergence".
class KLDivergence : public LossMeanMetric {
 public:
  explicit KLDivergence(MetricOptions options = {});
  std::string class_name() const override { return "KLDivergence"; }
  std::string direction() const override { return "down"; }
};

// mean(y_pred - y_true * log(y_pred + 1e-7)) over the last axis (losses::Poisson), averaged over samples.
// Default name "poisson".
class Poisson : public LossMeanMetric {
 public:
  explicit Poisson(MetricOptions options = {});
  std::string class_name() const override { return "Poisson"; }
  std::string direction() const override { return "down"; }
};

}  // namespace ember::metrics
