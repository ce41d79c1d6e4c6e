// CategoricalGeneralizedCrossEntropy (keras/src/losses/losses.py categorical_generalized_cross_entropy).
#include "losses/categorical_generalized_cross_entropy.h"

#include <vector>

#include "framework/ops/array.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "framework/ops/tensor_helpers.h"
#include "losses/loss_utils.h"

namespace ember::losses {

namespace {
constexpr const char* kCategoricalGeneralizedCrossEntropyName = "categorical_generalized_cross_entropy";
constexpr const char* kGceWho = "CategoricalGeneralizedCrossEntropy";
// Keras exports only the class (its losses.get knows neither name), so no function-name alias.
[[maybe_unused]] const bool categorical_generalized_cross_entropy_registered =
    detail::register_loss(kGceWho, &CategoricalGeneralizedCrossEntropy::from_config);
}  // namespace

CategoricalGeneralizedCrossEntropy::CategoricalGeneralizedCrossEntropy(CategoricalGeneralizedCrossEntropyOptions options)
    : Loss(detail::name_or(options.name, kCategoricalGeneralizedCrossEntropyName), options.reduction, kGceWho),
      q_(options.q) {
  EMBER_CHECK(q_ > 0 && q_ < 1, InvalidArgument) << kGceWho << ": q must be in the interval (0, 1), got " << q_;
}

Tensor CategoricalGeneralizedCrossEntropy::call(const Tensor& y_true, const Tensor& y_pred) const {
  detail::check_input(kGceWho, y_true, "y_true");
  detail::check_input(kGceWho, y_pred, "y_pred");
  EMBER_CHECK(y_true.dtype() != DType::Bool, InvalidArgument)
      << kGceWho << ": y_true must hold integer class indices (an integer or float type), got bool";
  EMBER_CHECK(y_pred.rank() >= 1, InvalidArgument)
      << kGceWho << ": y_pred must be at least rank 1 (..., num_classes), got shape " << y_pred.shape();
  const Tensor p = ops::to_float32(y_pred);
  const int64_t num_classes = p.shape()[p.rank() - 1];
  Tensor labels = y_true;
  // Keras documents labels of shape [batch] or [batch, 1]; it would broadcast the latter into a
  // [batch, batch] loss, so the trailing 1 is squeezed here.
  if (labels.rank() == p.rank() && labels.rank() > 0 && labels.shape()[labels.rank() - 1] == 1)
    labels = ops::squeeze(labels, {-1});
  const std::vector<int64_t> dims = p.shape().dims();
  const Shape expected(std::vector<int64_t>(dims.begin(), dims.end() - 1));
  EMBER_CHECK(labels.shape() == expected, InvalidArgument)
      << kGceWho << ": y_true has shape " << y_true.shape() << " but y_pred has shape " << y_pred.shape()
      << "; expected one integer class index per prediction, shape " << expected << " (or with a trailing 1)";
  // Keras casts the labels to int (truncating floats); one_hot gives an all-zero row outside the range.
  const Tensor one_hot = ops::one_hot(ops::cast(labels, DType::Int64), num_classes);
  const Tensor prob = ops::reduce_sum(p * one_hot, -1);
  return (1.0 - ops::pow(prob, ops::f32(q_))) / q_;
}

nlohmann::json CategoricalGeneralizedCrossEntropy::get_config() const {
  nlohmann::json c = Loss::get_config();
  c["q"] = q_;
  return c;
}

LossPtr CategoricalGeneralizedCrossEntropy::from_config(const nlohmann::json& config) {
  auto base = detail::read_base_config(config, kGceWho, kCategoricalGeneralizedCrossEntropyName, {"q"});
  return std::make_shared<CategoricalGeneralizedCrossEntropy>(CategoricalGeneralizedCrossEntropyOptions{
      .q = detail::config_double(config, "q", 0.5, kGceWho), .reduction = base.reduction, .name = base.name});
}

}  // namespace ember::losses
