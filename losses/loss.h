#pragma once
// Loss (Keras: keras.losses.Loss): the base of every loss. It owns the reduction and the sample
// weights; a subclass computes per-sample losses in call() (Keras's last-axis mean semantics).
//
// Numerics follow Keras 3 with the TensorFlow backend: inputs are cast to float32 whatever their
// dtype (so losses stay float32 under mixed precision), probabilities are clipped to
// [1e-7, 1 - 1e-7], and from_logits uses fused, stable forms (log_softmax, softplus-style BCE).
// One Keras behaviour has no equivalent: Keras tensors produced by its softmax/sigmoid activations
// carry their logits (`_keras_logits`), and its crossentropies silently use those instead of the
// probabilities. Ember tensors carry no such thing, so a loss on probabilities always clips them.
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/core/tensor.h"

namespace ember::losses {

class Loss {
 public:
  virtual ~Loss() = default;

  // The reduced float32 loss (Keras: Loss.__call__): call(y_true, y_pred), weighted by sample_weight
  // (broadcast after Keras's squeeze/expand of a trailing 1), then reduced. Differentiable in y_pred.
  Tensor operator()(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = {}) const;
  // Per-sample float32 losses, before weighting and reduction (Keras: Loss.call).
  virtual Tensor call(const Tensor& y_true, const Tensor& y_pred) const = 0;
  // call() plus the mask of valid per-sample losses (undefined: all valid). Only
  // SparseCategoricalCrossentropy with ignore_class has one; Keras attaches it as the loss's mask
  // (public for the metrics that wrap a loss, which weigh masked values as Keras's Mean does).
  virtual Tensor call_with_mask(const Tensor& y_true, const Tensor& y_pred, Tensor* mask) const;

  // The Keras class name ("MeanSquaredError", ...).
  virtual std::string class_name() const = 0;
  // Keras's config: {"name", "reduction"} plus the subclass's options.
  virtual nlohmann::json get_config() const;
  // A copy of this loss (losses are immutable values; the copy is independent).
  virtual std::shared_ptr<Loss> clone() const = 0;

  const std::string& name() const { return name_; }
  // "sum_over_batch_size", "sum", "none", "mean" or "mean_with_sample_weight".
  const std::string& reduction() const { return reduction_; }

 protected:
  // Validates reduction (InvalidArgument naming class_name otherwise).
  Loss(std::string name, std::string reduction, const char* class_name);

 private:
  std::string name_;
  std::string reduction_;
};

using LossPtr = std::shared_ptr<Loss>;

// The options of a loss without options of its own: Keras's reduction and name (empty: the class's
// Keras default name, e.g. "mean_squared_error").
struct LossOptions {
  std::string reduction = "sum_over_batch_size";
  std::string name = {};
};

// Keras's axis=None | int | tuple of the losses that sum over several axes (Dice, Tversky): unset for
// every axis, `.axis = 1`, or `.axis = {1, 2}`. It keeps which form it was given, so get_config writes
// what Keras writes (null, 1 or [1]).
struct AxisOption {
  AxisOption() = default;
  AxisOption(int64_t axis) : axes(std::vector<int64_t>{axis}) {}  // NOLINT(google-explicit-constructor)
  AxisOption(int axis) : AxisOption(int64_t{axis}) {}            // NOLINT(google-explicit-constructor)
  AxisOption(std::initializer_list<int64_t> list) : axes(std::vector<int64_t>(list)), is_list(true) {}
  explicit AxisOption(std::vector<int64_t> list) : axes(std::move(list)), is_list(true) {}
  std::optional<std::vector<int64_t>> axes;  // nullopt: every axis
  bool is_list = false;
};

// Declares what every concrete loss has: its Keras class name, clone() and from_config().
#define EMBER_LOSS(ClassName)                                                                          \
 public:                                                                                               \
  std::string class_name() const override { return #ClassName; }                                       \
  std::shared_ptr<::ember::losses::Loss> clone() const override { return std::make_shared<ClassName>(*this); } \
  /* The loss a Keras config describes (the keys Keras writes, plus this class's options). */          \
  static std::shared_ptr<::ember::losses::Loss> from_config(const nlohmann::json& config);

// Keras's reduce_weighted_values: merges mask into sample_weight (with sum_over_batch_size/mean, valid
// entries weigh total/valid so the mean runs over valid entries only), multiplies, and reduces:
// "sum" sums; "sum_over_batch_size"/"mean" divide the sum by the element count of the weighted
// values; "mean_with_sample_weight" by the sum of the weights; "none" returns them unreduced (as do
// scalar and shape-(0,) values). Division by zero gives 0. Inside Strategy::run the three means are divided
// by the replicas in sync as well (Keras 3 under TF), since the optimizer sums the replicas' gradients.
// `who` names the caller in errors.
Tensor reduce_weighted_values(const Tensor& values, const Tensor& sample_weight = {}, const Tensor& mask = {},
                              const std::string& reduction = "sum_over_batch_size", const std::string& who = "Loss");

// What Keras 3's compile makes of the labels for "accuracy" and "crossentropy", from the shapes alone
// (keras/src/trainers/compile_utils.py is_binary_or_sparse_categorical): one prediction per sample is
// binary; labels of lower rank than the predictions, or a trailing 1 against several classes, are
// sparse; anything else is categorical (one-hot).
enum class LabelKind { Binary, Sparse, Categorical };
LabelKind compile_label_kind(const Shape& y_true, const Shape& y_pred);

// Throws InvalidArgument unless reduction is one Keras accepts.
void validate_reduction(const std::string& reduction, const std::string& who);

// A loss from a Keras name as compile accepts it: class names ("MeanSquaredError"), function names
// ("mean_squared_error") and aliases ("mse", "mae", "mape", "kld", "bce" and upper-case forms). Function
// names and aliases give the loss that name (Keras wraps the function under the identifier); class
// names give the default name. "crossentropy" and "ce" (any case) give a crossentropy that picks its
// kind at its first call by compile_label_kind, as Keras 3's compile does. Unknown names:
// InvalidArgument listing the known ones.
LossPtr get(const std::string& identifier);
inline LossPtr get(const char* identifier) { return get(std::string(identifier)); }
// A loss from a string (as above) or a serialized {"class_name", "config"} object.
LossPtr get(const nlohmann::json& identifier);
// {"class_name", "config"} (Keras: keras.losses.serialize, without module fields).
nlohmann::json serialize(const Loss& loss);
// The loss a {"class_name", "config"} object describes; config keys Keras writes are accepted.
LossPtr deserialize(const nlohmann::json& j);

namespace detail {
// How a Keras config builds a loss (each class registers its own from its .cpp).
using LossFactory = std::shared_ptr<Loss> (*)(const nlohmann::json& config);
// Registers class_name (and extra function names/aliases mapping to it) at static-init time.
bool register_loss(const char* class_name, LossFactory factory, std::initializer_list<const char*> aliases = {});
}  // namespace detail

}  // namespace ember::losses
