// Keras's update_confusion_matrix_variables and helpers (keras/src/metrics/metrics_utils.py), as eager
// ops that stay on the device.
#include "framework/model/metrics/confusion_matrix.h"

#include <algorithm>
#include <cmath>

#include "framework/core/error.h"
#include "framework/ops/array.h"
#include "framework/ops/broadcast.h"
#include "framework/ops/creation.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "framework/ops/tensor_helpers.h"

namespace ember::metrics::detail {

namespace {

// Above this many (threshold, prediction) pairs the bucket counts go through unsorted_segment_sum
// (linear in the predictions, but its index validation reads the buckets on the host) instead of one
// comparison per pair (no host read; the usual case: batch x 200 thresholds).
constexpr int64_t kDensePairs = int64_t{1} << 22;

// The thresholds as a float32 column ([T, 1], or [T, 1, 1] for multi-label [1, N, L] predictions), on
// the predictions' device.
Tensor thresholds_column(const std::vector<double>& thresholds, const Device& device, bool multi_label) {
  std::vector<float> t(thresholds.begin(), thresholds.end());  // Keras converts them to float32
  const int64_t n = static_cast<int64_t>(t.size());
  return Tensor::from_vector<float>(t, multi_label ? Shape{n, 1, 1} : Shape{n, 1}, Device::cpu()).to(device);
}

// Whether a tensor of shape `from` broadcasts to exactly `to` (NumPy rules, no rank growth of `to`).
bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.rank() > to.rank()) return false;
  try {
    return broadcast_shapes("broadcast_to", from, to) == to;
  } catch (const InvalidArgument&) {
    return false;
  }
}

// sample_weight broadcast to y_pred's shape; InvalidArgument when it does not broadcast.
Tensor broadcast_weights(const Tensor& sample_weight, const Shape& pred_shape, const Shape& given,
                         const std::string& who) {
  EMBER_CHECK(broadcasts_to(sample_weight.shape(), pred_shape), InvalidArgument)
      << who << ": sample_weight of shape " << given << " does not broadcast to the predictions of shape "
      << pred_shape;
  return ops::broadcast_to(sample_weight, pred_shape);
}

// Keras's label weights: [1, L] broadcast to y_pred's shape, so y_pred needs rank >= 2 and a last axis of
// L (or L == 1); InvalidArgument naming both shapes otherwise.
Tensor broadcast_label_weights(const Tensor& label_weights, const Tensor& y_pred, const Shape& given_pred,
                               const std::string& who) {
  const Tensor row = ops::expand_dims(ops::to_float32(label_weights).to(y_pred.device()), 0);
  EMBER_CHECK(broadcasts_to(row.shape(), y_pred.shape()), InvalidArgument)
      << who << ": label_weights of shape " << label_weights.shape() << " do not fit predictions of shape "
      << given_pred << " (compared as " << y_pred.shape()
      << "); expected one weight per label, the last axis of predictions of rank >= 2";
  return ops::broadcast_to(row, y_pred.shape());
}

void add(Variable* v, const Tensor& delta) {
  if (v) v->assign_add(delta);
}

// The reversed cumulative sum along axis 0 of x [T, L] (out[t] = sum of x[b] for b >= t), by log2(T)
// shifted additions: no [T, T, L] intermediate.
Tensor reverse_cumsum_rows(Tensor x) {
  const int64_t rows = x.shape()[0];
  for (int64_t shift = 1; shift < rows; shift *= 2)
    x = x + ops::pad(ops::slice(x, {shift, 0}, {rows - shift, -1}), {{0, shift}, {0, 0}});
  return x;
}

// Keras's _update_confusion_matrix_variables_optimized for evenly spaced thresholds. Single-label: every
// entry is one prediction (flattened), and the counts are [T]; multi-label: y_pred is [N, L] and the
// counts are [T, L].
void update_evenly(const ConfusionVariables& vars, const Tensor& y_true, const Tensor& y_pred, const Tensor& weights,
                   int64_t num_thresholds, bool with_epsilon, bool multi_label) {
  auto flat = [&](const Tensor& x) { return multi_label ? x : ops::reshape(x, Shape{-1}); };
  const Tensor pred = flat(ops::clip_by_value(y_pred, 0.0, 1.0));
  Tensor truth = flat(ops::to_float32(ops::not_equal(y_true, ops::f32(0))));
  Tensor true_labels = weights.defined() ? truth * weights : truth;
  Tensor false_labels = weights.defined() ? (1.0 - truth) * weights : 1.0 - truth;
  // A prediction must be strictly above a threshold: values in (t_{b}, t_{b+1}] land in bucket b.
  Tensor bucket = ops::ceil(pred * static_cast<double>(num_thresholds - 1)) - 1.0;
  if (with_epsilon) bucket = ops::relu(bucket);  // every prediction in [0, 1] exceeds -epsilon

  const int64_t m = pred.num_elements();
  Tensor tp, fp;
  if (m * num_thresholds <= kDensePairs) {
    // tp[t] = sum of true_labels whose bucket >= t: the reversed cumulative sum of the bucket sums
    // (per label: [T, N, L] comparisons summed over N).
    const Tensor t_idx = ops::reshape(ops::range(0, static_cast<double>(num_thresholds), 1, DType::Float32),
                                      multi_label ? Shape{num_thresholds, 1, 1} : Shape{num_thresholds, 1});
    const Tensor at_or_above = ops::greater_equal(ops::expand_dims(bucket, 0), t_idx);
    tp = ops::reduce_sum(ops::where(at_or_above, ops::expand_dims(true_labels, 0), ops::f32(0)), 1);
    fp = ops::reduce_sum(ops::where(at_or_above, ops::expand_dims(false_labels, 0), ops::f32(0)), 1);
  } else {
    // Bucket sums by one segment sum ([T, L]; L = 1 single-label): label l's bucket b is segment
    // l * (T + 1) + b, and bucket -1 (a prediction of exactly 0 without the epsilon end) goes to b = T,
    // which is sliced off, as TF's segment sum drops negative ids.
    const int64_t labels = multi_label ? pred.shape()[1] : 1;
    const Tensor in_range =
        ops::cast(ops::where(ops::less(bucket, ops::f32(0)), ops::f32(static_cast<double>(num_thresholds)), bucket), DType::Int32);
    const Tensor ids =
        multi_label ? ops::reshape(in_range + ops::range(0, static_cast<double>(labels * (num_thresholds + 1)),
                                                         static_cast<double>(num_thresholds + 1), DType::Int32),
                                   Shape{-1})
                    : in_range;
    auto bucket_sums = [&](const Tensor& data) {
      const Tensor sums = ops::unsorted_segment_sum(ops::reshape(data, Shape{-1}), ids, labels * (num_thresholds + 1));
      return ops::transpose(ops::slice(ops::reshape(sums, Shape{labels, num_thresholds + 1}), {0, 0},
                                       {labels, num_thresholds}));
    };
    // tp[t] = the sum of the bucket sums b >= t. Single-label as a masked [T, T] sum; per label by
    // log2(T) shifted additions (no [T, T, L] intermediate).
    auto reverse_cumsum = [&](const Tensor& sums) {
      if (multi_label) return reverse_cumsum_rows(sums);
      const Tensor idx = ops::range(0, static_cast<double>(num_thresholds), 1, DType::Int32);
      const Tensor upper = ops::greater_equal(ops::expand_dims(idx, 0), ops::expand_dims(idx, 1));  // [t, b]: b >= t
      return ops::reduce_sum(ops::where(upper, ops::reshape(sums, Shape{1, num_thresholds}), ops::f32(0)), 1);
    };
    tp = reverse_cumsum(bucket_sums(true_labels));
    fp = reverse_cumsum(bucket_sums(false_labels));
  }
  add(vars.true_positives, tp);
  add(vars.false_positives, fp);
  // Totals per label ([L], broadcast over the thresholds) or over everything.
  auto total = [&](const Tensor& x) { return multi_label ? ops::reduce_sum(x, 0) : ops::reduce_sum(x); };
  if (vars.true_negatives) add(vars.true_negatives, total(false_labels) - fp);
  if (vars.false_negatives) add(vars.false_negatives, total(true_labels) - tp);
}

// The general path: every prediction against every threshold ([T, predictions], or [T, N, L] per label).
void update_general(const ConfusionVariables& vars, const Tensor& y_true, const Tensor& y_pred, const Tensor& weights,
                    const std::vector<double>& thresholds, bool multi_label) {
  const Shape data_shape = multi_label ? Shape{1, y_pred.shape()[0], y_pred.shape()[1]} : Shape{1, -1};
  const Tensor pred = ops::reshape(y_pred, data_shape);
  const Tensor label_pos = ops::reshape(ops::not_equal(y_true, ops::f32(0)), data_shape);
  const Tensor pred_pos = ops::greater(pred, thresholds_column(thresholds, pred.device(), multi_label));
  const Tensor w = weights.defined() ? ops::reshape(weights, data_shape) : Tensor();
  auto count = [&](Variable* v, const Tensor& label, const Tensor& predicted) {
    if (!v) return;
    const Tensor both = ops::logical_and(label, predicted);
    v->assign_add(ops::reduce_sum(w.defined() ? ops::where(both, w, ops::f32(0)) : ops::to_float32(both), 1));
  };
  count(vars.true_positives, label_pos, pred_pos);
  if (vars.false_negatives || vars.true_negatives) {
    const Tensor pred_neg = ops::logical_not(pred_pos);
    count(vars.false_negatives, label_pos, pred_neg);
    const Tensor label_neg = ops::logical_not(label_pos);
    count(vars.false_positives, label_neg, pred_pos);
    count(vars.true_negatives, label_neg, pred_neg);
  } else if (vars.false_positives) {
    count(vars.false_positives, ops::logical_not(label_pos), pred_pos);
  }
}

// x[..., class_id:class_id + 1]: the column of one class, keeping the axis.
Tensor class_column(const Tensor& x, int64_t class_id) {
  std::vector<int64_t> begin(static_cast<size_t>(x.rank()), 0), size(static_cast<size_t>(x.rank()), -1);
  begin.back() = class_id;
  size.back() = 1;
  return ops::slice(x, begin, size);
}

}  // namespace

bool is_evenly_distributed_thresholds(const std::vector<double>& thresholds) {
  const size_t n = thresholds.size();
  if (n < 3) return false;
  for (size_t i = 0; i < n; ++i) {
    // numpy: np.arange(n, dtype=float32) / (n - 1) stays float32; allclose compares in float64.
    const double even = static_cast<double>(static_cast<float>(i) / static_cast<float>(n - 1));
    if (!(std::abs(thresholds[i] - even) <= 1e-7 + 1e-5 * std::abs(even))) return false;
  }
  return true;
}

void check_thresholds_range(const std::vector<double>& thresholds, const std::string& who) {
  for (double t : thresholds)
    EMBER_CHECK(t >= 0 && t <= 1, InvalidArgument) << who << ": threshold values must be in [0, 1], got " << t;
}

std::vector<double> parse_init_thresholds(const std::optional<std::vector<double>>& thresholds,
                                          double default_threshold, const std::string& who) {
  if (!thresholds) return {default_threshold};
  EMBER_CHECK(!thresholds->empty(), InvalidArgument) << who << ": thresholds must not be empty";
  check_thresholds_range(*thresholds, who);
  return *thresholds;
}

std::optional<std::vector<double>> config_thresholds(const nlohmann::json& c, const std::string& who) {
  auto it = c.find("thresholds");
  if (it == c.end() || it->is_null()) return std::nullopt;
  const bool numbers = it->is_number() || (it->is_array() && std::all_of(it->begin(), it->end(), [](const auto& v) {
                                             return v.is_number();
                                           }));
  EMBER_CHECK(numbers, InvalidArgument)
      << who << ": config \"thresholds\" must be a number or a list of numbers, got " << it->dump();
  if (it->is_number()) return std::vector<double>{it->get<double>()};
  return it->get<std::vector<double>>();
}

Tensor filter_top_k(const Tensor& x, int64_t k) {
  const int64_t classes = x.shape()[x.rank() - 1];
  EMBER_CHECK(k >= 1 && k <= classes, InvalidArgument)
      << "top_k: k must be in [1, " << classes << "] for predictions of shape " << x.shape() << ", got " << k;
  // Rank of x_i in its row: the larger scores, plus the equal ones at a lower index (top_k's order).
  const Tensor xi = ops::expand_dims(x, -1);  // [..., C, 1]
  const Tensor xj = ops::expand_dims(x, -2);  // [..., 1, C]
  const Tensor idx = ops::range(0, static_cast<double>(classes), 1, DType::Int32);
  const Tensor j_before_i = ops::less(ops::expand_dims(idx, 0), ops::expand_dims(idx, 1));  // [i, j]: j < i
  const Tensor ahead = ops::logical_or(ops::greater(xj, xi), ops::logical_and(ops::equal(xj, xi), j_before_i));
  const Tensor rank = ops::reduce_sum(ops::to_float32(ahead), -1);
  const Tensor mask = ops::to_float32(ops::less(rank, ops::f32(static_cast<double>(k))));
  return x * mask + (1.0 - mask) * kNegInf;
}

void update_confusion_matrix_variables(const ConfusionVariables& vars, const Tensor& y_true_in, const Tensor& y_pred_in,
                                       const std::vector<double>& thresholds, bool thresholds_distributed_evenly,
                                       const Tensor& sample_weight_in, std::optional<int64_t> top_k,
                                       std::optional<int64_t> class_id, const std::string& who, bool multi_label,
                                       const Tensor& label_weights) {
  EMBER_CHECK(y_true_in.defined() && y_pred_in.defined(), InvalidArgument)
      << who << ": y_true and y_pred must be defined tensors";
  EMBER_CHECK(!(multi_label && label_weights.defined()), InvalidArgument)
      << who << ": label_weights for multi-label data are applied outside update_confusion_matrix_variables";
  y_true_in.check_concrete(who.c_str());
  y_pred_in.check_concrete(who.c_str());
  auto [y_pred, y_true] = ops::squeeze_or_expand_to_same_rank(ops::to_float32(y_pred_in), ops::to_float32(y_true_in));
  if (multi_label && y_pred.rank() == 1 && y_pred_in.rank() == 2) {
    // A y_pred of [N, 1] against a y_true of [N] was squeezed: one label (Keras counts it as one too).
    y_pred = ops::expand_dims(y_pred, -1);
    y_true = ops::expand_dims(y_true, -1);
  }
  EMBER_CHECK(y_true.shape() == y_pred.shape(), InvalidArgument)
      << who << ": y_true has shape " << y_true_in.shape() << " but y_pred has shape " << y_pred_in.shape()
      << "; they must be equal (up to a trailing 1)";
  EMBER_CHECK(!multi_label || y_pred.rank() == 2, InvalidArgument)
      << who << ": with multi_label, y_pred must have rank 2 (samples, labels), got shape " << y_pred_in.shape();
  Tensor sample_weight;
  if (sample_weight_in.defined()) {
    sample_weight = ops::expand_dims(ops::to_float32(sample_weight_in), -1);
    sample_weight = ops::squeeze_or_expand_to_same_rank(y_true, sample_weight, /*expand_rank_1=*/false).second;
  }
  if (top_k) {
    EMBER_CHECK(y_pred.rank() >= 1, InvalidArgument) << who << ": top_k needs predictions with a class axis";
    y_pred = filter_top_k(y_pred, *top_k);
  }
  if (class_id) {
    EMBER_CHECK(y_pred.rank() >= 2, InvalidArgument)
        << who << ": when class_id is given, y_pred must have shape (num_samples, num_classes), got "
        << y_pred_in.shape();
    const int64_t classes = y_pred.shape()[y_pred.rank() - 1];
    EMBER_CHECK(*class_id >= 0 && *class_id < classes, InvalidArgument)
        << who << ": class_id " << *class_id << " is outside [0, " << classes << ") for y_pred of shape "
        << y_pred_in.shape();
    y_true = class_column(y_true, *class_id);
    y_pred = class_column(y_pred, *class_id);
  }
  // Keras: sample_weight * label_weights, both broadcast to y_pred's shape (flattened unless multi-label).
  Tensor weights =
      sample_weight.defined() ? broadcast_weights(sample_weight, y_pred.shape(), sample_weight_in.shape(), who) : Tensor();
  if (label_weights.defined()) {
    const Tensor per_entry = broadcast_label_weights(label_weights, y_pred, y_pred_in.shape(), who);
    weights = weights.defined() ? weights * per_entry : per_entry;
  }
  if (weights.defined() && !multi_label) weights = ops::reshape(weights, Shape{-1});
  if (thresholds_distributed_evenly) {
    const bool with_epsilon = thresholds.front() < 0.0 || thresholds.back() > 1.0;
    update_evenly(vars, y_true, y_pred, weights, static_cast<int64_t>(thresholds.size()), with_epsilon, multi_label);
  } else {
    update_general(vars, y_true, y_pred, weights, thresholds, multi_label);
  }
}

}  // namespace ember::metrics::detail
