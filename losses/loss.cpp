// The Loss base (keras/src/losses/loss.py): reduction, sample weights and masks; plus the name loss_registry.
#include "losses/loss.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <sstream>

#include "framework/core/error.h"
#include "framework/core/strings.h"
#include "framework/distribute/replica_loss.h"
#include "framework/model/layer.h"
#include "framework/model/loss_values.h"
#include "framework/ops/array.h"
#include "framework/ops/broadcast.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "framework/ops/tensor_helpers.h"
#include "losses/loss_utils.h"

namespace ember::losses {

using nlohmann::json;

namespace {

constexpr const char* kReductions[] = {"sum_over_batch_size", "sum", "none", "mean", "mean_with_sample_weight"};

bool is_mean(const std::string& r) { return r == "sum_over_batch_size" || r == "mean"; }

// Keras's apply_mask: the mask as weights (total/valid per valid entry for the mean reductions, so
// the mean runs over the valid entries), multiplied into the sample weights.
Tensor apply_mask(Tensor sample_weight, const Tensor& mask, const std::string& reduction) {
  const Tensor mask_f = ops::to_float32(mask);
  Tensor float_mask;
  if (is_mean(reduction)) {
    const Tensor total = ops::f32(static_cast<double>(mask.num_elements()));
    const Tensor valid = ops::reduce_sum(mask_f);
    const Tensor mask_weight = ops::div_no_nan(total, valid);
    float_mask = ops::where(ops::cast(mask_f, DType::Bool), mask_weight, ops::f32(0));
  } else {
    float_mask = mask_f;
  }
  if (!sample_weight.defined()) return float_mask;
  auto [m, w] = ops::squeeze_or_expand_to_same_rank(float_mask, ops::to_float32(sample_weight));
  return w * m;
}

}  // namespace

void validate_reduction(const std::string& reduction, const std::string& who) {
  for (const char* r : kReductions)
    if (reduction == r) return;
  throw InvalidArgument(who + ": invalid reduction \"" + reduction +
                        "\"; expected one of \"sum_over_batch_size\", \"sum\", \"none\", \"mean\", "
                        "\"mean_with_sample_weight\"");
}

Tensor reduce_weighted_values(const Tensor& values_in, const Tensor& sample_weight_in, const Tensor& mask,
                              const std::string& reduction, const std::string& who) {
  validate_reduction(reduction, who);
  Tensor values = ops::to_float32(values_in);
  Tensor sample_weight = sample_weight_in.defined() ? ops::to_float32(sample_weight_in) : Tensor();
  if (mask.defined()) sample_weight = apply_mask(sample_weight, mask, reduction);

  if (sample_weight.defined()) {
    auto [v, w] = ops::squeeze_or_expand_to_same_rank(values, sample_weight);
    try {
      (void)broadcast_shapes("multiply", v.shape(), w.shape());
    } catch (const InvalidArgument&) {
      throw InvalidArgument(who + ": sample_weight of shape " + sample_weight_in.shape().to_string() +
                            " does not broadcast to the per-sample losses of shape " + values.shape().to_string());
    }
    values = v * w;
    sample_weight = w;
  }

  // Keras returns scalar and empty rank-1 values as they are.
  const Shape& s = values.shape();
  if (reduction == "none" || s.rank() == 0 || (s.rank() == 1 && s[0] == 0)) return values;
  Tensor loss = ops::reduce_sum(values);
  if (reduction == "sum") return loss;
  if (reduction == "mean_with_sample_weight" && sample_weight.defined()) {
    loss = ops::div_no_nan(loss, ops::reduce_sum(sample_weight));
  } else {
    const int64_t n = s.num_elements();
    if (n > 0) loss = loss / static_cast<double>(n);
  }
  // Inside strategy.run a mean is this replica's share of the global batch's mean (Keras 3 under TF:
  // scale_loss_for_distribution), since the optimizer sums the replicas' gradients.
  return distribute::scale_loss_for_distribution(loss, distribute::num_replicas_in_run());
}

Loss::Loss(std::string name, std::string reduction, const char* class_name)
    : name_(std::move(name)), reduction_(std::move(reduction)) {
  validate_reduction(reduction_, class_name);
}

Tensor Loss::operator()(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) const {
  Tensor mask;
  Tensor values = call_with_mask(y_true, y_pred, &mask);
  // Keras's Loss.__call__: the mask beside y_pred (a model output's, e.g. an RNN's with return_sequences after
  // Masking) weighs the losses too, and-ed with the loss's own.
  const Tensor in_mask = backend::get_keras_mask(y_pred);
  if (in_mask.defined()) mask = mask.defined() ? ops::logical_and(ops::cast(in_mask, DType::Bool), mask) : in_mask;
  if (sample_weight.defined()) detail::check_input(class_name(), sample_weight, "sample_weight");
  return reduce_weighted_values(values, sample_weight, mask, reduction_, class_name());
}

Tensor Loss::call_with_mask(const Tensor& y_true, const Tensor& y_pred, Tensor* mask) const {
  if (mask) *mask = Tensor();
  return call(y_true, y_pred);
}

json Loss::get_config() const { return {{"name", name_}, {"reduction", reduction_}}; }

// ---- loss_registry -------------------------------------------------------------------------------

namespace {

struct LossEntry {
  std::string class_name;
  detail::LossFactory factory;
  bool alias;  // a function name or alias: the loss is named after the identifier
};

std::map<std::string, LossEntry>& loss_registry() {
  static std::map<std::string, LossEntry> r;
  return r;
}
std::mutex& loss_registry_mutex() {
  static std::mutex m;
  return m;
}

[[noreturn]] void unknown_loss(const std::string& identifier) {
  std::ostringstream known;
  {
    std::lock_guard<std::mutex> lock(loss_registry_mutex());
    for (const auto& [name, e] : loss_registry()) known << (known.tellp() > 0 ? ", " : "") << name;
  }
  throw InvalidArgument("Unknown loss \"" + identifier + "\"; known losses: " + known.str());
}

LossEntry find_loss_entry(const std::string& identifier) {
  std::lock_guard<std::mutex> lock(loss_registry_mutex());
  auto it = loss_registry().find(identifier);
  if (it == loss_registry().end()) return LossEntry{};
  return it->second;
}

// "crossentropy" / "ce" before the shapes are known (Keras 3's compile_utils.get_loss): the first call
// picks binary, sparse categorical or categorical crossentropy (defaults, probabilities) by
// compile_label_kind, and the loss keeps that choice (and reports its class name) from then on.
class CompileCrossentropy : public Loss {
 public:
  explicit CompileCrossentropy(std::string name)
      : Loss(std::move(name), "sum_over_batch_size", "LossFunctionWrapper") {}
  std::string class_name() const override { return resolved_ ? resolved_->class_name() : "LossFunctionWrapper"; }
  std::shared_ptr<Loss> clone() const override { return std::make_shared<CompileCrossentropy>(*this); }
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override {
    if (!resolved_) {
      static constexpr const char* kByKind[] = {"binary_crossentropy", "sparse_categorical_crossentropy",
                                                "categorical_crossentropy"};
      resolved_ = get(kByKind[static_cast<int>(compile_label_kind(y_true.shape(), y_pred.shape()))]);
    }
    return resolved_->call(y_true, y_pred);
  }

 private:
  mutable LossPtr resolved_;
};

}  // namespace

LabelKind compile_label_kind(const Shape& y_true, const Shape& y_pred) {
  const int64_t t_rank = y_true.rank(), p_rank = y_pred.rank();
  const int64_t t_last = t_rank > 0 ? y_true[t_rank - 1] : -1;
  const int64_t p_last = p_rank > 0 ? y_pred[p_rank - 1] : -1;
  if (p_last == 1) return LabelKind::Binary;
  if (t_rank < p_rank || (t_last == 1 && p_last > 1)) return LabelKind::Sparse;
  return LabelKind::Categorical;
}

namespace detail {
bool register_loss(const char* class_name, LossFactory factory, std::initializer_list<const char*> aliases) {
  std::lock_guard<std::mutex> lock(loss_registry_mutex());
  loss_registry()[class_name] = LossEntry{class_name, factory, false};
  for (const char* a : aliases) loss_registry()[a] = LossEntry{class_name, factory, true};
  // The loss-based metrics reach each loss's values through framework/, which knows no loss class.
  ::ember::detail::register_loss_values(class_name, [factory](const json& config) -> ::ember::detail::LossValuesFn {
    std::shared_ptr<const Loss> loss = factory(config);
    return [loss](const Tensor& y_true, const Tensor& y_pred, Tensor* mask) {
      return loss->call_with_mask(y_true, y_pred, mask);
    };
  });
  return true;
}
}  // namespace detail

LossPtr get(const std::string& identifier) {
  const std::string lower = ascii_lower(identifier);
  if (lower == "crossentropy" || lower == "ce") return std::make_shared<CompileCrossentropy>(identifier);
  LossEntry e = find_loss_entry(identifier);
  if (!e.factory) unknown_loss(identifier);
  return e.factory(e.alias ? json{{"name", identifier}} : json::object());
}

LossPtr get(const json& identifier) {
  if (identifier.is_string()) return get(identifier.get<std::string>());
  return deserialize(identifier);
}

json serialize(const Loss& loss) { return {{"class_name", loss.class_name()}, {"config", loss.get_config()}}; }

LossPtr deserialize(const json& j) {
  EMBER_CHECK(j.is_object() && j.contains("class_name") && j["class_name"].is_string(), InvalidArgument)
      << "losses::deserialize: expected {\"class_name\": ..., \"config\": {...}}, got " << j.dump();
  const std::string cls = j["class_name"].get<std::string>();
  LossEntry e = find_loss_entry(cls);
  if (!e.factory || e.alias) unknown_loss(cls);
  const json config = j.contains("config") && !j["config"].is_null() ? j["config"] : json::object();
  return e.factory(config);
}

}  // namespace ember::losses
