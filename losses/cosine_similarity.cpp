// CosineSimilarity (keras/src/losses/losses.py cosine_similarity; keras/src/ops/nn.py _normalize).
#include "losses/cosine_similarity.h"

#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "framework/ops/tensor_helpers.h"
#include "losses/loss_utils.h"

namespace ember::losses {

namespace {
constexpr const char* kCosineSimilarityName = "cosine_similarity";
[[maybe_unused]] const bool cosine_similarity_registered =
    detail::register_loss("CosineSimilarity", &CosineSimilarity::from_config, {"cosine_similarity"});

// Keras's L2 normalize: x * min(rsqrt(sum(x^2)), 1/epsilon).
Tensor l2_normalize(const Tensor& x, int64_t axis) {
  const Tensor inv_norm = ops::rsqrt(ops::reduce_sum(ops::square(x), axis, /*keepdims=*/true));
  return x * ops::minimum(inv_norm, ops::f32(1.0 / 1e-7));
}
}  // namespace

CosineSimilarity::CosineSimilarity(CosineSimilarityOptions options)
    : Loss(detail::name_or(options.name, kCosineSimilarityName), options.reduction, "CosineSimilarity"), axis_(options.axis) {}

Tensor CosineSimilarity::call(const Tensor& y_true, const Tensor& y_pred) const {
  auto [t, p] = detail::prepare_same_shape(class_name(), y_true, y_pred);
  const int64_t axis = normalize_axis(axis_, p.rank(), "CosineSimilarity");
  return -ops::reduce_sum(l2_normalize(t, axis) * l2_normalize(p, axis), axis);
}

nlohmann::json CosineSimilarity::get_config() const {
  nlohmann::json c = Loss::get_config();
  c["axis"] = axis_;
  return c;
}

LossPtr CosineSimilarity::from_config(const nlohmann::json& config) {
  auto base = detail::read_base_config(config, "CosineSimilarity", kCosineSimilarityName, {"axis"});
  return std::make_shared<CosineSimilarity>(CosineSimilarityOptions{
      .axis = detail::config_int(config, "axis", -1, "CosineSimilarity"), .reduction = base.reduction, .name = base.name});
}

}  // namespace ember::losses
