// BinaryCrossentropy, CategoricalCrossentropy, SparseCategoricalCrossentropy, KLDivergence and Poisson
// (keras/src/metrics/probabilistic_metrics.py), over the losses of the same names.
#include "framework/model/metrics/probabilistic_metrics.h"

#include "framework/core/config_reader.h"
#include "framework/model/metrics/metrics.h"

namespace ember::metrics {

namespace {

using ::ember::detail::config_bool;
using ::ember::detail::config_double;
using ::ember::detail::config_int;

[[maybe_unused]] const bool probabilistic_metrics_registered = [] {
  detail::register_metric("BinaryCrossentropy", [](const nlohmann::json& c) -> MetricPtr {
    const char* who = "BinaryCrossentropy";
    const std::string name = detail::read_metric_base(c, who, "binary_crossentropy", {"from_logits", "label_smoothing"});
    return std::make_shared<BinaryCrossentropy>(
        BinaryCrossentropyOptions{.from_logits = config_bool(c, "from_logits", false, who),
                                  .label_smoothing = config_double(c, "label_smoothing", 0.0, who),
                                  .name = name});
  }, {"binary_crossentropy", "bce", "BCE"});
  detail::register_metric("CategoricalCrossentropy", [](const nlohmann::json& c) -> MetricPtr {
    const char* who = "CategoricalCrossentropy";
    const std::string name =
        detail::read_metric_base(c, who, "categorical_crossentropy", {"from_logits", "label_smoothing", "axis"});
    return std::make_shared<CategoricalCrossentropy>(
        CategoricalCrossentropyOptions{.from_logits = config_bool(c, "from_logits", false, who),
                                       .label_smoothing = config_double(c, "label_smoothing", 0.0, who),
                                       .axis = config_int(c, "axis", -1, who),
                                       .name = name});
  }, {"categorical_crossentropy"});
  detail::register_metric("SparseCategoricalCrossentropy", [](const nlohmann::json& c) -> MetricPtr {
    const char* who = "SparseCategoricalCrossentropy";
    const std::string name =
        detail::read_metric_base(c, who, "sparse_categorical_crossentropy", {"from_logits", "ignore_class", "axis"});
    return std::make_shared<SparseCategoricalCrossentropy>(
        SparseCategoricalCrossentropyOptions{.from_logits = config_bool(c, "from_logits", false, who),
                                             .ignore_class = ::ember::detail::config_optional_int(c, "ignore_class", who),
                                             .axis = config_int(c, "axis", -1, who),
                                             .name = name});
  }, {"sparse_categorical_crossentropy"});
  // Keras 3's metrics.get knows no "kld" (only the loss does).
  detail::register_metric("KLDivergence", [](const nlohmann::json& c) -> MetricPtr {
    return std::make_shared<KLDivergence>(MetricOptions{.name = detail::read_metric_base(c, "KLDivergence", "kl_divergence")});
  }, {"kl_divergence"});
  detail::register_metric("Poisson", [](const nlohmann::json& c) -> MetricPtr {
    return std::make_shared<Poisson>(MetricOptions{.name = detail::read_metric_base(c, "Poisson", "poisson")});
  }, {"poisson"});
  return true;
}();

}  // namespace

BinaryCrossentropy::BinaryCrossentropy(BinaryCrossentropyOptions options)
    : LossMeanMetric(options.name.empty() ? "binary_crossentropy" : options.name,
                     ::ember::detail::make_loss_values("BinaryCrossentropy",
                                                       {{"from_logits", options.from_logits},
                                                        {"label_smoothing", options.label_smoothing}})),
      options_(std::move(options)) {}

nlohmann::json BinaryCrossentropy::get_config() const {
  nlohmann::json c = Metric::get_config();
  c["from_logits"] = options_.from_logits;
  c["label_smoothing"] = options_.label_smoothing;
  return c;
}

CategoricalCrossentropy::CategoricalCrossentropy(CategoricalCrossentropyOptions options)
    : LossMeanMetric(options.name.empty() ? "categorical_crossentropy" : options.name,
                     ::ember::detail::make_loss_values("CategoricalCrossentropy",
                                                       {{"from_logits", options.from_logits},
                                                        {"label_smoothing", options.label_smoothing},
                                                        {"axis", options.axis}})),
      options_(std::move(options)) {}

nlohmann::json CategoricalCrossentropy::get_config() const {
  nlohmann::json c = Metric::get_config();
  c["from_logits"] = options_.from_logits;
  c["label_smoothing"] = options_.label_smoothing;
  c["axis"] = options_.axis;
  return c;
}

SparseCategoricalCrossentropy::SparseCategoricalCrossentropy(SparseCategoricalCrossentropyOptions options)
    : LossMeanMetric(options.name.empty() ? "sparse_categorical_crossentropy" : options.name,
                     ::ember::detail::make_loss_values(
                         "SparseCategoricalCrossentropy",
                         {{"from_logits", options.from_logits},
                          {"ignore_class", options.ignore_class ? nlohmann::json(*options.ignore_class) : nlohmann::json(nullptr)},
                          {"axis", options.axis}})),
      options_(std::move(options)) {}

nlohmann::json SparseCategoricalCrossentropy::get_config() const {
  nlohmann::json c = Metric::get_config();
  c["from_logits"] = options_.from_logits;
  c["ignore_class"] = options_.ignore_class ? nlohmann::json(*options_.ignore_class) : nlohmann::json(nullptr);
  c["axis"] = options_.axis;
  return c;
}

KLDivergence::KLDivergence(MetricOptions options)
    : LossMeanMetric(options.name.empty() ? "kl_divergence" : options.name, ::ember::detail::make_loss_values("KLDivergence")) {}

Poisson::Poisson(MetricOptions options)
    : LossMeanMetric(options.name.empty() ? "poisson" : options.name, ::ember::detail::make_loss_values("Poisson")) {}

}  // namespace ember::metrics
