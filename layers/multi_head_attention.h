#pragma once
// MultiHeadAttention (Keras: keras.layers.MultiHeadAttention): projects query, key and value into num_heads
// heads (Keras's EinsumDense sublayers "query", "key", "value"), runs scaled dot-product attention per head and
// projects the heads back ("attention_output"). Called on {query, value} or {query, value, key} (key defaults
// to value), each (batch, length, features); the output is (batch, query_len, output_shape or query features).
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "framework/model/layer.h"
#include "layers/dropout.h"

namespace ember::layers {

namespace attention_detail {
class EinsumDense;
}

struct MultiHeadAttentionOptions {
  std::optional<int64_t> value_dim{};     // per-head size of the value projection; default key_dim
  double dropout = 0.0;                   // dropout rate on the attention weights (training only)
  bool use_bias = true;
  std::optional<int64_t> output_shape{};  // the output's last dimension; default the query's
  // Only the default (attention over the sequence axis of rank-3 inputs) is supported: Keras's None or (1,).
  std::vector<int64_t> attention_axes{};
  Initializer kernel_initializer = "glorot_uniform";
  Initializer bias_initializer = "zeros";
  Regularizer kernel_regularizer{};
  Regularizer bias_regularizer{};
  std::optional<uint64_t> seed{};  // the dropout's seed
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

// Keras's call arguments beyond the inputs. Masks are bool or 0/1 tensors (true: keep).
struct AttentionCallOptions {
  std::optional<Tensor> key{};             // (batch, key_len, features); default the value
  std::optional<Tensor> attention_mask{};  // (batch, query_len, key_len): which keys each query may attend to
  std::optional<Tensor> query_mask{};      // (batch, query_len)
  std::optional<Tensor> value_mask{};      // (batch, key_len)
  std::optional<Tensor> key_mask{};        // (batch, key_len); Keras combines it with value_mask
  bool use_causal_mask = false;            // query i attends only to keys 0..i
  bool training = false;
};

class MultiHeadAttention : public Layer {
  EMBER_LAYER(MultiHeadAttention)
  MultiHeadAttention(int64_t num_heads, int64_t key_dim, MultiHeadAttentionOptions options = {});
  MultiHeadAttention(MultiHeadAttention&&) = default;
  static LayerPtr from_config(const nlohmann::json& config);

  using Layer::build;
  using Layer::call;
  using Layer::compute_output_shape;
  // {query_shape, value_shape[, key_shape]}.
  void build(const std::vector<Shape>& input_shapes) override;
  // {query, value[, key]} without masks (what a functional model runs).
  Tensor call(const std::vector<Tensor>& xs, bool training) override;
  std::vector<Tensor> call_all(const std::vector<Tensor>& xs, bool training) override;
  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  void check_input_shape(const std::vector<Shape>& input_shapes) const override;
  nlohmann::json get_config() const override;
  // Keras's .weights.h5 paths of the sublayers: query_dense, key_dense, value_dense, output_dense, _dropout_layer.
  std::vector<std::pair<std::string, LayerPtr>> attribute_sublayers() const override;

  // Keras's call(query, value, key, masks..., use_causal_mask, training) on concrete tensors (builds on first use).
  Tensor attend(const Tensor& query, const Tensor& value, const AttentionCallOptions& call = {});
  // The same with return_attention_scores=True: {output, scores (batch, heads, query_len, key_len)}.
  std::pair<Tensor, Tensor> attend_with_scores(const Tensor& query, const Tensor& value,
                                               const AttentionCallOptions& call = {});
  // Keras's _compute_attention_mask: attention_mask, the query/value/key masks and the causal mask combined
  // into one bool (batch or 1, query_len, key_len) mask, or none. The one place masks are read.
  static std::optional<Tensor> compute_attention_mask(const Tensor& query, const Tensor& value,
                                                      const AttentionCallOptions& call);

  int64_t num_heads() const { return num_heads_; }
  int64_t key_dim() const { return key_dim_; }
  int64_t value_dim() const { return options_.value_dim.value_or(key_dim_); }

 private:
  std::vector<Tensor> run(const std::vector<Tensor>& xs, bool training, bool with_scores);
  std::vector<Tensor> attend_impl(const Tensor& query, const Tensor& value, const AttentionCallOptions& call,
                                  bool with_scores);
  std::string who() const { return "MultiHeadAttention '" + name() + "'"; }

  int64_t num_heads_, key_dim_;
  MultiHeadAttentionOptions options_;
  std::shared_ptr<attention_detail::EinsumDense> query_dense_, key_dense_, value_dense_, output_dense_;
  std::shared_ptr<Dropout> dropout_layer_;
  // Masks and flags of the attend() call in progress, read by call_all.
  std::optional<AttentionCallOptions> pending_;
  bool pending_scores_ = false;
};

}  // namespace ember::layers
