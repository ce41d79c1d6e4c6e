// SparseCategoricalCrossentropy (keras/src/losses/losses.py sparse_categorical_crossentropy;
// keras/src/backend/tensorflow/nn.py sparse_categorical_crossentropy; TF's
// sparse_softmax_cross_entropy_with_logits).
#include "losses/sparse_categorical_crossentropy.h"

#include "framework/core/error_context.h"
#include "framework/ops/array.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/nn.h"
#include "framework/ops/tensor_helpers.h"
#include "losses/loss_utils.h"

namespace ember::losses {

namespace {
constexpr const char* kSparseCategoricalCrossentropyName = "sparse_categorical_crossentropy";
constexpr const char* kWho = "SparseCategoricalCrossentropy";
[[maybe_unused]] const bool sparse_categorical_crossentropy_registered = detail::register_loss(
    kWho, &SparseCategoricalCrossentropy::from_config, {"sparse_categorical_crossentropy"});
constexpr double kSparseEpsilon = 1e-7;
}  // namespace

SparseCategoricalCrossentropy::SparseCategoricalCrossentropy(SparseCategoricalCrossentropyOptions options)
    : Loss(detail::name_or(options.name, kSparseCategoricalCrossentropyName), options.reduction, kWho), options_(options) {}

Tensor SparseCategoricalCrossentropy::call(const Tensor& y_true, const Tensor& y_pred) const {
  return call_with_mask(y_true, y_pred, nullptr);
}

Tensor SparseCategoricalCrossentropy::call_with_mask(const Tensor& y_true, const Tensor& y_pred, Tensor* mask) const {
  detail::check_input(kWho, y_true, "y_true");
  detail::check_input(kWho, y_pred, "y_pred");
  EMBER_CHECK(y_true.dtype() != DType::Bool, InvalidArgument)
      << kWho << ": y_true must hold integer class indices (int32, int64, uint8 or a float type), got bool";
  EMBER_CHECK(y_pred.rank() >= 1, InvalidArgument)
      << kWho << ": y_pred must be at least rank 1 (..., num_classes), got shape " << y_pred.shape();
  const int64_t rank = y_pred.rank();
  EMBER_CHECK(normalize_axis(options_.axis, rank, kWho) == rank - 1, InvalidArgument)
      << kWho << ": only axis=-1 is supported (as Keras's TensorFlow backend), got axis=" << options_.axis
      << " for y_pred of shape " << y_pred.shape();

  Tensor p = ops::to_float32(y_pred);
  auto [labels, pred] = ops::squeeze_or_expand_to_same_rank(y_true, p);  // Keras's wrapper does this first
  if (labels.rank() == pred.rank() && labels.rank() > 0 && labels.shape()[labels.rank() - 1] == 1)
    labels = ops::squeeze(labels, {-1});
  bool ok = labels.rank() == pred.rank() - 1;
  for (int64_t d = 0; ok && d < labels.rank(); ++d) ok = labels.shape()[d] == pred.shape()[d];
  EMBER_CHECK(ok, InvalidArgument)
      << kWho << ": y_true has shape " << y_true.shape() << " but y_pred has shape " << y_pred.shape()
      << "; sparse labels must have y_pred's shape without its class axis (a trailing 1 is allowed). "
      << "For one-hot labels use CategoricalCrossentropy";

  Tensor valid;
  if (options_.ignore_class) {
    // Keras compares the float32 labels with the ignored class, then zeroes both the ignored labels
    // and their predictions (so no NaN or out-of-range index can come from them).
    const Tensor labels_f = ops::to_float32(labels);
    valid = ops::not_equal(labels_f, ops::f32(static_cast<double>(*options_.ignore_class)));
    labels = ops::where(valid, labels_f, ops::f32(0));
    pred = ops::where(ops::expand_dims(valid, -1), pred, ops::f32(0));
  }
  if (labels.dtype() != DType::Int32 && labels.dtype() != DType::Int64) labels = ops::cast(labels, DType::Int64);

  // TF's sparse softmax crossentropy on logits (one op); probabilities enter as log(clip(p)).
  const Tensor logits = options_.from_logits ? pred : ops::log(ops::clip_by_value(pred, kSparseEpsilon, 1.0 - kSparseEpsilon));
  // The shapes and dtypes are right by now: a failure is a label out of range (on a replay too).
  const int64_t classes = pred.shape()[rank - 1];
  Tensor result = with_error_context<InvalidArgument>(
      [classes](const InvalidArgument& e) {
        throw InvalidArgument(std::string(kWho) + ": a label is outside the valid range [0, " +
                              std::to_string(classes) + ") of y_pred's " + std::to_string(classes) + " classes (" +
                              e.what() + ")");
      },
      [&] { return ops::sparse_softmax_cross_entropy_with_logits(labels, logits); });

  if (options_.ignore_class) {
    result = ops::where(valid, result, ops::f32(0));
    if (mask) *mask = valid;
  } else if (mask) {
    *mask = Tensor();
  }
  return result;
}

nlohmann::json SparseCategoricalCrossentropy::get_config() const {
  nlohmann::json c = Loss::get_config();
  c["from_logits"] = options_.from_logits;
  c["ignore_class"] = options_.ignore_class ? nlohmann::json(*options_.ignore_class) : nlohmann::json(nullptr);
  return c;
}

LossPtr SparseCategoricalCrossentropy::from_config(const nlohmann::json& config) {
  auto base = detail::read_base_config(config, kWho, kSparseCategoricalCrossentropyName, {"from_logits", "ignore_class", "axis"});
  return std::make_shared<SparseCategoricalCrossentropy>(SparseCategoricalCrossentropyOptions{
      .from_logits = detail::config_bool(config, "from_logits", false, kWho),
      .ignore_class = detail::config_optional_int(config, "ignore_class", kWho),
      .reduction = base.reduction,
      .axis = detail::config_int(config, "axis", -1, kWho),
      .name = base.name});
}

}  // namespace ember::losses
