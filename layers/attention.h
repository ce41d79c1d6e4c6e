#pragma once
// Attention (Keras: keras.layers.Attention): Luong-style dot-product attention, or Bahdanau-style "concat" scores,
// over {query, value} or {query, value, key} (key defaults to value): query (batch, Tq, dim), value (batch, Tv,
// value_dim), key (batch, Tv, dim); the output is (batch, Tq, value_dim). No projections: the inputs are used as
// they are. AdditiveAttention (additive_attention.h) is the additive form.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "framework/model/layer.h"
#include "layers/seeded_noise.h"

namespace ember::layers {

struct AttentionOptions {
  bool use_scale = false;         // a trainable scalar "scale" multiplying the scores (initialised to 1)
  std::string score_mode = "dot";  // "dot": query . key; "concat": sum(tanh(query + key))
  double dropout = 0.0;           // dropout rate on the attention weights (training only)
  std::optional<uint64_t> seed{};
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

// Keras's call arguments beyond the inputs: mask=[query_mask, value_mask] (bool or 0/1, true: keep),
// use_causal_mask and training. On symbolic inputs the masks are symbolic too (e.g. a layers::Input), and the
// functional model records them (Keras's node kwargs).
struct AttentionMaskOptions {
  std::optional<Tensor> query_mask{};  // (batch, Tq): masked query positions give zero outputs
  std::optional<Tensor> value_mask{};  // (batch, Tv): masked value positions get no attention
  bool use_causal_mask = false;        // query i attends only to values 0..i
  bool training = false;
};

class Attention : public Layer {
  EMBER_LAYER(Attention)
  explicit Attention(AttentionOptions options = {});
  Attention(Attention&&) = default;
  static LayerPtr from_config(const nlohmann::json& config);

  using Layer::build;
  using Layer::call;
  using Layer::compute_output_shape;
  void build(const std::vector<Shape>& input_shapes) override;
  // {query, value[, key]}, with the masks and flags of call_kwargs() (Keras's names: mask=[query_mask, value_mask],
  // use_causal_mask, return_attention_scores) when the call has them.
  Tensor call(const std::vector<Tensor>& xs, bool training) override;
  std::vector<Tensor> call_all(const std::vector<Tensor>& xs, bool training) override;
  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  // The output's shape, then with return_attention_scores the weights' (batch, Tq, Tv).
  std::vector<Shape> compute_output_shapes(const std::vector<Shape>& input_shapes) override;
  void check_input_shape(const std::vector<Shape>& input_shapes) const override;
  void check_call_kwargs(const CallKwargs& kwargs, const std::vector<Shape>& input_shapes) const override;
  nlohmann::json get_config() const override;

  // Keras's call(inputs, mask=[query_mask, value_mask], use_causal_mask, training). On symbolic tensors it records
  // a functional-model node with these arguments; the layer must then be a temporary or held by a std::shared_ptr.
  Tensor attend(const std::vector<Tensor>& inputs, const AttentionMaskOptions& call = {}) &;
  Tensor attend(const std::vector<Tensor>& inputs, const AttentionMaskOptions& call = {}) &&;
  // The same with return_attention_scores=True: {output, attention weights (batch, Tq, Tv)}.
  std::pair<Tensor, Tensor> attend_with_scores(const std::vector<Tensor>& inputs, const AttentionMaskOptions& call = {}) &;
  std::pair<Tensor, Tensor> attend_with_scores(const std::vector<Tensor>& inputs, const AttentionMaskOptions& call = {}) &&;
  // The call arguments as Keras keyword arguments (training goes with the call), and back.
  static CallKwargs to_call_kwargs(const AttentionMaskOptions& call, bool return_attention_scores);
  static AttentionMaskOptions from_call_kwargs(const CallKwargs& kwargs, const std::string& who = "Attention");
  // Keras's _calculate_score_mask: which (query, value) pairs may attend, (batch, Tv) or (batch or 1, Tq, Tv), or
  // none. The one place this layer reads the value mask and the causal flag.
  static std::optional<Tensor> compute_score_mask(int64_t query_len, int64_t value_len,
                                                  const AttentionMaskOptions& call);

 protected:
  // For AdditiveAttention: its own base name and defaults.
  Attention(const std::string& base_name, AttentionOptions options);
  // Keras's _calculate_scores: (batch, Tq, Tv) scores of query against key.
  virtual Tensor calculate_scores(const Tensor& query, const Tensor& key) const;
  // Whether calculate_scores is the (scaled) dot product, which the fused attention op computes itself.
  virtual bool dot_product_scores() const { return options_.score_mode == "dot"; }
  std::string who() const { return class_name() + " '" + name() + "'"; }

  AttentionOptions options_;
  Variable scale_, concat_score_weight_;

 private:
  SeededNoise noise_;
};

}  // namespace ember::layers
