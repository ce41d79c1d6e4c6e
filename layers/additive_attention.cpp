#include "layers/additive_attention.h"

#include "framework/core/config_reader.h"
#include "framework/ops/array.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"

namespace ember::layers {

AdditiveAttention::AdditiveAttention(AdditiveAttentionOptions o)
    : Attention("additive_attention", AttentionOptions{.use_scale = o.use_scale,
                                                       .score_mode = "dot",
                                                       .dropout = o.dropout,
                                                       .seed = o.seed,
                                                       .name = o.name,
                                                       .dtype = o.dtype,
                                                       .trainable = o.trainable}) {}

void AdditiveAttention::build(const std::vector<Shape>& shapes) {
  check_input_shape(shapes);
  if (options_.use_scale) scale_ = add_weight("scale", {shapes[0][2]}, "glorot_uniform");
}

Tensor AdditiveAttention::calculate_scores(const Tensor& query, const Tensor& key) const {
  // (batch, Tq, 1, dim) + (batch, 1, Tv, dim) -> sum over dim of scale * tanh(.)
  Tensor t = ops::tanh(ops::expand_dims(query, -2) + ops::expand_dims(key, -3));
  if (options_.use_scale) t = read(scale_) * t;
  return ops::reduce_sum(t, {-1});
}

nlohmann::json AdditiveAttention::get_config() const {
  nlohmann::json c = Attention::get_config();
  c.erase("score_mode");
  return c;
}

LayerPtr AdditiveAttention::from_config(const nlohmann::json& c) {
  using namespace ::ember::detail;
  LayerOptions base = options_from_config(c);
  const std::string who = "AdditiveAttention '" + base.name + "'";
  AdditiveAttentionOptions o;
  o.use_scale = config_bool(c, "use_scale", true, who);
  o.dropout = config_double(c, "dropout", 0.0, who);
  o.seed = seed_from_config(c, who);
  o.name = base.name;
  o.dtype = base.dtype;
  o.trainable = base.trainable;
  return std::make_shared<AdditiveAttention>(o);
}

EMBER_REGISTER_LAYER(AdditiveAttention);

}  // namespace ember::layers
