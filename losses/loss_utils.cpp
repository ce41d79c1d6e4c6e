// Input preparation and config reading shared by the loss classes.
#include "losses/loss_utils.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "framework/core/error.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "framework/ops/tensor_helpers.h"

namespace ember::losses::detail {

using nlohmann::json;

void check_input(const std::string& who, const Tensor& t, const char* what) {
  EMBER_CHECK(t.defined(), InvalidArgument) << who << ": " << what << " is an undefined tensor";
  t.check_concrete((who + " (" + what + ")").c_str());
}

void check_same_shape(const std::string& who, const Shape& y_true, const Shape& y_pred, const char* why) {
  EMBER_CHECK(y_true == y_pred, InvalidArgument)
      << who << ": y_true has shape " << y_true << " but y_pred has shape " << y_pred << "; "
      << (why ? why : "they must be equal (a trailing dimension of 1 on either side is squeezed or added first)");
}

std::pair<Tensor, Tensor> prepare_same_shape(const std::string& who, const Tensor& y_true, const Tensor& y_pred) {
  check_input(who, y_true, "y_true");
  check_input(who, y_pred, "y_pred");
  auto [t, p] = ops::squeeze_or_expand_to_same_rank(ops::to_float32(y_true), ops::to_float32(y_pred));
  if (t.shape() != p.shape()) check_same_shape(who, y_true.shape(), y_pred.shape());
  return {t, p};
}

Tensor convert_binary_labels_to_hinge(const Tensor& y_true) {
  const Tensor is_binary = ops::reduce_all(
      ops::logical_or(ops::equal(y_true, ops::f32(0)), ops::equal(y_true, ops::f32(1))));
  return ops::where(is_binary, y_true * 2.0 - 1.0, y_true);
}

Tensor sigmoid_cross_entropy_with_logits(const Tensor& z, const Tensor& x) {
  // TF's where-based form rather than relu/abs: at x == 0 its gradient is sigmoid(0) - z, where
  // relu'(0) = |x|'(0) = 0 would give -z (and zero logits are common at initialisation).
  const Tensor zero = ops::f32(0);
  const Tensor cond = ops::greater_equal(x, zero);
  const Tensor relu_logits = ops::where(cond, x, zero);
  const Tensor neg_abs_logits = ops::where(cond, -x, x);
  return (relu_logits - x * z) + ops::log1p(ops::exp(neg_abs_logits));
}

Tensor binary_crossentropy_from_probabilities(const Tensor& z, const Tensor& p) {
  constexpr double kEpsilon = 1e-7;
  const Tensor clipped = ops::clip_by_value(p, kEpsilon, 1.0 - kEpsilon);
  return -(z * ops::log(clipped) + (1.0 - z) * ops::log(1.0 - clipped));
}

Tensor binary_crossentropy(const Tensor& z, const Tensor& x, bool from_logits) {
  return from_logits ? sigmoid_cross_entropy_with_logits(z, x) : binary_crossentropy_from_probabilities(z, x);
}

void check_label_smoothing(const char* who, double label_smoothing) {
  EMBER_CHECK(label_smoothing >= 0 && label_smoothing <= 1, InvalidArgument)
      << who << ": label_smoothing must be in [0, 1], got " << label_smoothing;
}

Tensor smooth_binary_labels(const Tensor& z, double s) { return s == 0 ? z : z * (1.0 - s) + 0.5 * s; }

Tensor smooth_categorical_labels(const Tensor& t, double s) {
  if (s == 0) return t;
  const float add = static_cast<float>(s) / static_cast<float>(t.shape()[t.rank() - 1]);
  return t * (1.0 - s) + static_cast<double>(add);
}

Tensor clipped_class_probabilities(const Tensor& p, int64_t axis) {
  constexpr double kEpsilon = 1e-7;
  return ops::clip_by_value(p / ops::reduce_sum(p, axis, /*keepdims=*/true), kEpsilon, 1.0 - kEpsilon);
}

ops::Axes checked_axes(const std::string& who, const AxisOption& axis, int64_t rank) {
  if (!axis.axes) return {};
  std::set<int64_t> seen;
  for (int64_t a : *axis.axes) {
    EMBER_CHECK(a >= -rank && a < rank, InvalidArgument)
        << who << ": axis " << a << " is out of range for inputs of rank " << rank << " (expected axes in ["
        << -rank << ", " << rank << "))";
    EMBER_CHECK(seen.insert(a < 0 ? a + rank : a).second, InvalidArgument)
        << who << ": axis " << a << " names a dimension already listed in axis; each axis may appear once";
  }
  return ops::Axes(*axis.axes);
}

json axis_option_to_json(const AxisOption& axis) {
  if (!axis.axes) return nullptr;
  if (!axis.is_list) return axis.axes->front();
  return *axis.axes;
}

AxisOption config_axis_option(const json& config, const char* key, const std::string& who) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return {};
  if (it->is_number_integer()) return AxisOption(it->get<int64_t>());
  EMBER_CHECK(it->is_array() && std::all_of(it->begin(), it->end(), [](const json& v) { return v.is_number_integer(); }),
              InvalidArgument)
      << who << ": config \"" << key << "\" must be null, an integer or a list of integers, got " << it->dump();
  return AxisOption(it->get<std::vector<int64_t>>());
}

std::string config_reduction(const json& config, const std::string& fallback, const std::string& who) {
  auto it = config.find("reduction");
  if (it == config.end()) return fallback;
  if (it->is_null()) return "none";  // Keras's reduction=None
  return config_string(config, "reduction", fallback, who);
}

BaseConfig read_base_config(const json& config, const std::string& class_name, const char* default_name,
                            std::initializer_list<const char*> extra) {
  ::ember::detail::check_config_keys(config, class_name, {"name", "reduction", "dtype"}, extra);
  const std::string dtype = config_string(config, "dtype", "float32", class_name);
  EMBER_CHECK(dtype == "float32", InvalidArgument)
      << class_name << ": config \"dtype\" is \"" << dtype << "\"; Ember's losses compute in float32 only";
  return {config_string(config, "name", default_name, class_name), config_reduction(config, "sum_over_batch_size", class_name)};
}

}  // namespace ember::losses::detail
