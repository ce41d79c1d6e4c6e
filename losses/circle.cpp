// Circle (keras/src/losses/losses.py circle; keras/src/utils/numerical_utils.py build_pos_neg_masks).
#include "losses/circle.h"

#include <limits>

#include "framework/ops/array.h"
#include "framework/ops/creation.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/linalg.h"
#include "framework/ops/reduce.h"
#include "framework/ops/tensor_helpers.h"
#include "losses/loss_utils.h"

namespace ember::losses {

namespace {
constexpr const char* kCircleName = "circle";
[[maybe_unused]] const bool circle_registered = detail::register_loss("Circle", &Circle::from_config, {"circle"});
}  // namespace

Circle::Circle(CircleOptions options)
    : Loss(detail::name_or(options.name, kCircleName), options.reduction, "Circle"), options_(std::move(options)) {}

Tensor Circle::call(const Tensor& y_true, const Tensor& y_pred) const { return call_with_mask(y_true, y_pred, nullptr); }

Tensor Circle::call_with_mask(const Tensor& y_true, const Tensor& y_pred, Tensor* mask) const {
  detail::check_input("Circle", y_true, "y_true");
  detail::check_input("Circle", y_pred, "y_pred");
  EMBER_CHECK(y_pred.rank() == 2, InvalidArgument)
      << "Circle: y_pred must be a batch of embeddings of shape (N, D), got shape " << y_pred.shape();
  const int64_t n = y_pred.shape()[0];
  const Shape& ts = y_true.shape();
  EMBER_CHECK(y_true.dtype() != DType::Bool && ((ts.rank() == 1 && ts[0] == n) || (ts == Shape{n, 1})),
              InvalidArgument)
      << "Circle: y_true must hold one integer label per embedding, shape (" << n << ",) or (" << n
      << ", 1) for y_pred of shape " << y_pred.shape() << ", got " << y_true.dtype() << " of shape " << ts;
  // Keras casts the labels to int32 (truncating floats) and compares every pair of them.
  const Tensor labels = ops::reshape(ops::cast(y_true, DType::Int32), Shape{n, 1});
  const Tensor p = ops::to_float32(y_pred);

  Tensor distances = 1.0 - ops::matmul(p, p, {.transpose_b = true});
  distances = ops::maximum(distances, ops::f32(0));
  Tensor positive = ops::equal(labels, ops::transpose(labels));
  const Tensor negative = ops::logical_not(positive);
  if (options_.remove_diagonal) positive = ops::logical_and(positive, ops::equal(ops::eye(n, n), ops::f32(0)));

  // Keras's constants: the optima and margins are Python floats, rounded to float32 where they meet a tensor.
  const double m = options_.margin, gamma = options_.gamma;
  const Tensor pos_weights = ops::maximum((m + distances) * ops::cast(positive, DType::Float32), ops::f32(0));
  const Tensor neg_weights = ops::maximum(((1 + m) - distances) * ops::cast(negative, DType::Float32), ops::f32(0));
  const Tensor pos_dists = m - distances;
  const Tensor neg_dists = (1 - m) - distances;
  const Tensor pos_wdists = ((-1 * gamma) * pos_weights) * pos_dists;
  const Tensor neg_wdists = (gamma * neg_weights) * neg_dists;

  const Tensor minus_inf = ops::f32(-std::numeric_limits<double>::infinity());
  const Tensor p_loss = ops::reduce_logsumexp(ops::where(positive, pos_wdists, minus_inf), 1);
  const Tensor n_loss = ops::reduce_logsumexp(ops::where(negative, neg_wdists, minus_inf), 1);
  const Tensor loss = ops::softplus(p_loss + n_loss);
  // A sample without a positive pair has p_loss = -inf and a loss of 0: Keras masks those out (the mask,
  // a comparison, carries no gradient).
  if (mask) *mask = ops::greater(loss, ops::f32(0));
  return loss;
}

nlohmann::json Circle::get_config() const {
  nlohmann::json c = Loss::get_config();
  c["gamma"] = options_.gamma;
  c["margin"] = options_.margin;
  c["remove_diagonal"] = options_.remove_diagonal;
  return c;
}

LossPtr Circle::from_config(const nlohmann::json& config) {
  const char* who = "Circle";
  auto base = detail::read_base_config(config, who, kCircleName, {"gamma", "margin", "remove_diagonal"});
  return std::make_shared<Circle>(CircleOptions{.gamma = detail::config_double(config, "gamma", 80.0, who),
                                                .margin = detail::config_double(config, "margin", 0.4, who),
                                                .remove_diagonal = detail::config_bool(config, "remove_diagonal", true, who),
                                                .reduction = base.reduction,
                                                .name = base.name});
}

}  // namespace ember::losses
