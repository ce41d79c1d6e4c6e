#pragma once
// AdditiveAttention (Keras: keras.layers.AdditiveAttention): Bahdanau-style attention, scores
// sum(scale * tanh(query + key)) over the features, with a trainable per-feature "scale" (use_scale). Called like
// Attention on {query, value[, key]}; query and key must have the same features.
#include "layers/attention.h"

namespace ember::layers {

struct AdditiveAttentionOptions {
  bool use_scale = true;  // a trainable "scale" of shape (dim,), glorot_uniform-initialised
  double dropout = 0.0;
  std::optional<uint64_t> seed{};
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class AdditiveAttention : public Attention {
  EMBER_LAYER(AdditiveAttention)
  explicit AdditiveAttention(AdditiveAttentionOptions options = {});
  AdditiveAttention(AdditiveAttention&&) = default;
  static LayerPtr from_config(const nlohmann::json& config);

  using Attention::build;
  void build(const std::vector<Shape>& input_shapes) override;
  nlohmann::json get_config() const override;

 protected:
  Tensor calculate_scores(const Tensor& query, const Tensor& key) const override;
  bool dot_product_scores() const override { return false; }
};

}  // namespace ember::layers
