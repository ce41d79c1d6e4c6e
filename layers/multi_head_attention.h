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
  // Keras's two required arguments, here or as the constructor's first two (not both ways at once).
  std::optional<int64_t> num_heads{};
  std::optional<int64_t> key_dim{};       // per-head size of the query and key projections
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

// Keras's call arguments beyond the inputs. Masks are bool or 0/1 tensors (true: keep). On symbolic tensors the
// masks are symbolic too (e.g. a layers::Input), and the functional model records them (Keras's node kwargs).
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
  // Keras's MultiHeadAttention(num_heads=4, key_dim=16): MultiHeadAttention({.num_heads = 4, .key_dim = 16}).
  explicit MultiHeadAttention(MultiHeadAttentionOptions options);
  MultiHeadAttention(MultiHeadAttention&&) = default;
  static LayerPtr from_config(const nlohmann::json& config);

  using Layer::build;
  using Layer::call;
  using Layer::compute_output_shape;
  // {query_shape, value_shape[, key_shape]}.
  void build(const std::vector<Shape>& input_shapes) override;
  // {query, value[, key]}, with the masks and flags of call_kwargs() (Keras's names: query_mask, value_mask,
  // key_mask, attention_mask, use_causal_mask, return_attention_scores) when the call has them.
  Tensor call(const std::vector<Tensor>& xs, bool training) override;
  std::vector<Tensor> call_all(const std::vector<Tensor>& xs, bool training) override;
  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  // The output's shape, then with return_attention_scores the scores' (batch, num_heads, query_len, key_len).
  std::vector<Shape> compute_output_shapes(const std::vector<Shape>& input_shapes) override;
  void check_input_shape(const std::vector<Shape>& input_shapes) const override;
  void check_call_kwargs(const CallKwargs& kwargs, const std::vector<Shape>& input_shapes) const override;
  nlohmann::json get_config() const override;
  // Keras's .weights.h5 paths of the sublayers: query_dense, key_dense, value_dense, output_dense, _dropout_layer.
  std::vector<std::pair<std::string, LayerPtr>> attribute_sublayers() const override;

  // Keras's call(query, value, key, masks..., use_causal_mask, training) (builds on first use). On symbolic tensors
  // it records a functional-model node with these arguments; the layer must then be a temporary or held by a
  // std::shared_ptr, as for operator().
  Tensor attend(const Tensor& query, const Tensor& value, const AttentionCallOptions& call = {}) &;
  Tensor attend(const Tensor& query, const Tensor& value, const AttentionCallOptions& call = {}) &&;
  // The same with return_attention_scores=True: {output, scores (batch, heads, query_len, key_len)}.
  std::pair<Tensor, Tensor> attend_with_scores(const Tensor& query, const Tensor& value,
                                               const AttentionCallOptions& call = {}) &;
  std::pair<Tensor, Tensor> attend_with_scores(const Tensor& query, const Tensor& value,
                                               const AttentionCallOptions& call = {}) &&;
  // The call arguments as Keras keyword arguments (the key goes with the inputs, training with the call), and back.
  static CallKwargs to_call_kwargs(const AttentionCallOptions& call, bool return_attention_scores);
  static AttentionCallOptions from_call_kwargs(const CallKwargs& kwargs, const std::string& who = "MultiHeadAttention");
  // Keras's _compute_attention_mask: attention_mask, the query/value/key masks and the causal mask combined
  // into one bool (batch or 1, query_len, key_len) mask, or none. The one place masks are read.
  static std::optional<Tensor> compute_attention_mask(const Tensor& query, const Tensor& value,
                                                      const AttentionCallOptions& call);

  int64_t num_heads() const { return num_heads_; }
  int64_t key_dim() const { return key_dim_; }
  int64_t value_dim() const { return options_.value_dim.value_or(key_dim_); }

 private:
  std::string who() const { return "MultiHeadAttention '" + name() + "'"; }

  int64_t num_heads_, key_dim_;
  MultiHeadAttentionOptions options_;
  std::shared_ptr<attention_detail::EinsumDense> query_dense_, key_dense_, value_dense_, output_dense_;
  std::shared_ptr<Dropout> dropout_layer_;
};

}  // namespace ember::layers
