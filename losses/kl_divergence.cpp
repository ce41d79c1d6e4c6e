// KLDivergence (keras/src/losses/losses.py kl_divergence).
#include "losses/kl_divergence.h"

#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "losses/loss_utils.h"

namespace ember::losses {

namespace {
constexpr const char* kKlDivergenceName = "kl_divergence";
[[maybe_unused]] const bool kl_divergence_registered = detail::register_loss("KLDivergence", &KLDivergence::from_config,
                                              {"kl_divergence", "kld", "KLD", "kullback_leibler_divergence"});
}  // namespace

KLDivergence::KLDivergence(LossOptions options)
    : Loss(detail::name_or(options.name, kKlDivergenceName), options.reduction, "KLDivergence") {}

Tensor KLDivergence::call(const Tensor& y_true, const Tensor& y_pred) const {
  auto [t, p] = detail::prepare_same_shape(class_name(), y_true, y_pred);
  t = ops::clip_by_value(t, 1e-7, 1.0);
  p = ops::clip_by_value(p, 1e-7, 1.0);
  return ops::reduce_sum(t * ops::log(t / p), -1);
}

LossPtr KLDivergence::from_config(const nlohmann::json& config) {
  auto base = detail::read_base_config(config, "KLDivergence", kKlDivergenceName);
  return std::make_shared<KLDivergence>(LossOptions{.reduction = base.reduction, .name = base.name});
}

}  // namespace ember::losses
