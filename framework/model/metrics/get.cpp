// metrics::get (Keras: compile_utils.get_metric), the class metric_registry, and (de)serialization.
//
// "accuracy" is resolved as Keras compiles it. Keras 3 decides from the shapes of the first batch
// (is_binary_or_sparse_categorical); tf.keras decided from the loss. With one of the three
// crossentropy losses the loss decides here (it says what the labels are, even where Keras 3's shape
// rule guesses wrong, e.g. BinaryCrossentropy on (N, 5) multi-label outputs, which Keras 3 would
// measure with CategoricalAccuracy); otherwise Keras 3's shape rule runs at the first update_state.
// Besides this file (the brief's get(name, loss) signature), only the metrics that wrap a loss know
// losses/ types: LossMeanMetric and the files that build its losses (regression_metrics.cpp,
// probabilistic_metrics.cpp, hinge_metrics.cpp).
#include <map>
#include <mutex>
#include <sstream>

#include "framework/core/config_reader.h"
#include "framework/core/error.h"
#include "framework/core/strings.h"
#include "framework/model/metrics/metrics.h"
#include "losses/loss.h"

namespace ember::metrics {

namespace {

struct MetricEntry {
  detail::MetricFactory factory = nullptr;
  bool alias = false;
};

std::map<std::string, MetricEntry>& metric_registry() {
  static std::map<std::string, MetricEntry> r;
  return r;
}
std::mutex& metric_registry_mutex() {
  static std::mutex m;
  return m;
}

MetricEntry find_metric_entry(const std::string& name) {
  std::lock_guard<std::mutex> lock(metric_registry_mutex());
  auto it = metric_registry().find(name);
  return it == metric_registry().end() ? MetricEntry{} : it->second;
}

[[noreturn]] void unknown_metric(const std::string& identifier) {
  std::ostringstream known;
  known << "accuracy, acc";
  {
    std::lock_guard<std::mutex> lock(metric_registry_mutex());
    for (const auto& [name, e] : metric_registry()) known << ", " << name;
  }
  throw InvalidArgument("Unknown metric \"" + identifier + "\"; known metrics: " + known.str());
}

// "accuracy" before the shapes are known: Keras 3's rule picks the variant at the first update, and
// the metric keeps it (and reports its class name) from then on.
class CompileAccuracy : public MeanMetricWrapper {
 public:
  explicit CompileAccuracy(std::string name) : MeanMetricWrapper(std::move(name)) {}
  std::string class_name() const override {
    switch (kind_) {
      case Kind::Binary: return "BinaryAccuracy";
      case Kind::Sparse: return "SparseCategoricalAccuracy";
      case Kind::Categorical: return "CategoricalAccuracy";
      default: return "Accuracy";  // unresolved: no batch seen yet
    }
  }
  std::string direction() const override { return "up"; }
  // Fresh state, same choice (or still unresolved).
  std::shared_ptr<Metric> clone() const override {
    auto m = std::make_shared<CompileAccuracy>(name());
    m->kind_ = kind_;
    return m;
  }
  nlohmann::json get_config() const override {
    nlohmann::json c = Metric::get_config();
    if (kind_ == Kind::Binary) c["threshold"] = 0.5;
    return c;
  }

 protected:
  Tensor values(const Tensor& y_true, const Tensor& y_pred) const override {
    if (kind_ == Kind::Unresolved) {
      switch (losses::compile_label_kind(y_true.shape(), y_pred.shape())) {
        case losses::LabelKind::Binary: kind_ = Kind::Binary; break;
        case losses::LabelKind::Sparse: kind_ = Kind::Sparse; break;
        case losses::LabelKind::Categorical: kind_ = Kind::Categorical; break;
      }
    }
    if (kind_ == Kind::Binary) return binary_accuracy(y_true, y_pred, 0.5);
    if (kind_ == Kind::Sparse) return sparse_categorical_accuracy(y_true, y_pred);
    return categorical_accuracy(y_true, y_pred);
  }

 private:
  enum class Kind { Unresolved, Binary, Sparse, Categorical };
  mutable Kind kind_ = Kind::Unresolved;
};

}  // namespace

namespace detail {

bool register_metric(const char* class_name, MetricFactory factory, std::initializer_list<const char*> aliases) {
  std::lock_guard<std::mutex> lock(metric_registry_mutex());
  metric_registry()[class_name] = MetricEntry{factory, false};
  for (const char* a : aliases) metric_registry()[a] = MetricEntry{factory, true};
  return true;
}

std::string read_metric_base(const nlohmann::json& config, const std::string& class_name, const char* default_name,
                             std::initializer_list<const char*> extra) {
  ::ember::detail::check_config_keys(config, class_name, {"name", "dtype"}, extra);
  const std::string dtype = ::ember::detail::config_string(config, "dtype", "float32", class_name);
  EMBER_CHECK(dtype == "float32", InvalidArgument)
      << class_name << ": config \"dtype\" is \"" << dtype << "\"; Ember's metrics keep float32 state only";
  return ::ember::detail::config_string(config, "name", default_name, class_name);
}

}  // namespace detail

MetricPtr get(const std::string& identifier, const losses::Loss* loss) {
  const std::string lower = ascii_lower(identifier);
  if (lower == "accuracy" || lower == "acc") {
    const std::string loss_class = loss ? loss->class_name() : "";
    if (loss_class == "SparseCategoricalCrossentropy")
      return std::make_shared<SparseCategoricalAccuracy>(MetricOptions{.name = identifier});
    if (loss_class == "BinaryCrossentropy")
      return std::make_shared<BinaryAccuracy>(BinaryAccuracyOptions{.name = identifier});
    if (loss_class == "CategoricalCrossentropy")
      return std::make_shared<CategoricalAccuracy>(MetricOptions{.name = identifier});
    return std::make_shared<CompileAccuracy>(identifier);
  }
  MetricEntry e = find_metric_entry(identifier);
  if (!e.factory) unknown_metric(identifier);
  MetricPtr m = e.factory(nlohmann::json::object());
  m->set_name(identifier);  // compile names a metric after its identifier
  return m;
}

nlohmann::json serialize(const Metric& metric) {
  return {{"class_name", metric.class_name()}, {"config", metric.get_config()}};
}

MetricPtr deserialize(const nlohmann::json& j) {
  EMBER_CHECK(j.is_object() && j.contains("class_name") && j["class_name"].is_string(), InvalidArgument)
      << "metrics::deserialize: expected {\"class_name\": ..., \"config\": {...}}, got " << j.dump();
  const std::string cls = j["class_name"].get<std::string>();
  MetricEntry e = find_metric_entry(cls);
  if (!e.factory || e.alias) unknown_metric(cls);
  const nlohmann::json config = j.contains("config") && !j["config"].is_null() ? j["config"] : nlohmann::json::object();
  return e.factory(config);
}

}  // namespace ember::metrics
