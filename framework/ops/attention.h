#pragma once
// Scaled dot-product attention (Keras: keras.ops.dot_product_attention; PyTorch:
// torch.nn.functional.scaled_dot_product_attention).
#include <optional>
#include <vector>

#include "framework/core/tensor.h"

namespace ember::ops {

struct DotProductAttentionOptions {
  // Added to the scores (after scaling); broadcastable to (batch, heads, query_len, key_len).
  std::optional<Tensor> bias{};
  // Which keys each query may attend to (true: attend), broadcastable to (batch, heads, query_len, key_len);
  // a non-bool mask counts its non-zero entries as true.
  std::optional<Tensor> mask{};
  // Multiplies the scores; default 1 / sqrt(head_dim).
  std::optional<double> scale{};
  // Query i attends only to keys j <= i (combined with mask).
  bool is_causal = false;
};

// softmax(scale * query . key^T + bias, masked) . value for query and key (batch, query_len or key_len, heads,
// head_dim) and value (batch, key_len, heads, value_dim); the result is (batch, query_len, heads, value_dim).
// Without bias and mask (is_causal aside) it runs the fused kernel, fused_attention, which never holds the
// (batch, heads, query_len, key_len) scores; float16 and bfloat16 inputs are computed there in float32.
// Otherwise masked scores become -0.7 * 3.38953e38 (-0.7 * 65500 in float16) as in Keras, so a query whose every key is
// masked attends uniformly to all keys (its output is the mean of the values) rather than giving NaN, and no
// gradient reaches its scores: that path is composed of
// matmul, where and softmax. Both run on every device, trace into graph mode and differentiate with respect to
// query, key, value and bias.
Tensor dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                             const DotProductAttentionOptions& options = {});
// The attention weights alone, softmax(scale * query . key^T + bias, masked), shape (batch, heads, query_len,
// key_len): what dot_product_attention multiplies the values by (MultiHeadAttention returns them as its scores
// and applies its dropout to them).
Tensor dot_product_attention_weights(const Tensor& query, const Tensor& key, const DotProductAttentionOptions& options = {});

// The fused kernel (FlashAttention): softmax(scale * query . key^T, causal) . value for float32 or float64 query
// and key (batch, query_len or key_len, heads, head_dim) and value (batch, key_len, heads, value_dim), streaming over
// blocks of keys with a running max and sum. Returns {attention (batch, query_len, heads, value_dim), logsumexp of
// each query's scores (batch, heads, query_len)}; the backward recomputes the probabilities from the logsumexp, which
// takes no gradient itself. key_len must be positive.
std::vector<Tensor> fused_attention(const Tensor& query, const Tensor& key, const Tensor& value, double scale,
                                    bool is_causal);
// fused_attention's backward: {d query, d key, d value} from its inputs, its two outputs and the gradient of the
// attention.
std::vector<Tensor> fused_attention_grad(const Tensor& query, const Tensor& key, const Tensor& value,
                                         const Tensor& output, const Tensor& logsumexp, const Tensor& grad_output,
                                         double scale, bool is_causal);

}  // namespace ember::ops
