#include "framework/ops/attention.h"

#include <cmath>

#include "framework/core/error.h"
#include "framework/ops/array.h"
#include "framework/ops/creation.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/linalg.h"
#include "framework/ops/nn.h"

namespace ember::ops {

namespace {

constexpr const char* kOp = "dot_product_attention";

// InvalidArgument unless `t` broadcasts to `target` (rank <= 4, each dimension 1 or equal, aligned right).
void check_broadcastable(const Tensor& t, const Shape& target, const char* what) {
  bool ok = t.rank() <= target.rank();
  for (int64_t i = 1; ok && i <= t.rank(); ++i) {
    const int64_t d = t.shape()[t.rank() - i], want = target[target.rank() - i];
    ok = d == 1 || d == want;
  }
  EMBER_CHECK(ok, InvalidArgument) << kOp << ": " << what << " of shape " << t.shape()
                                   << " does not broadcast to the scores' shape (batch, heads, query_len, key_len) = "
                                   << target;
}

// Keras's _get_large_negative (TensorFlow backend): -0.7 * 65500 for float16, else -0.7 * 3.38953e38 (about
// bfloat16's largest value, so one constant serves float32, float64 and bfloat16). Finite, so a fully masked row
// is softmax of equal values rather than of -inf.
double large_negative(DType dtype) { return -0.7 * (dtype == DType::Float16 ? 65500.0 : 3.38953e38); }

// InvalidArgument unless query and key are rank-4 tensors of one floating dtype sharing batch, heads and head_dim.
void check_query_key(const Tensor& query, const Tensor& key) {
  EMBER_CHECK(query.rank() == 4 && key.rank() == 4, InvalidArgument)
      << kOp << ": expected query and key of rank 4 (batch, length, heads, head_dim), got shapes " << query.shape()
      << " and " << key.shape();
  EMBER_CHECK(is_floating(query.dtype()) && key.dtype() == query.dtype(), InvalidArgument)
      << kOp << ": expected query and key of one floating dtype, got " << dtype_name(query.dtype()) << " and "
      << dtype_name(key.dtype());
  const Shape &q = query.shape(), &k = key.shape();
  EMBER_CHECK(q[0] == k[0] && q[2] == k[2] && q[3] == k[3], InvalidArgument)
      << kOp << ": query " << q << " and key " << k << " must share the batch, heads and head_dim dimensions";
}

// InvalidArgument unless value is rank 4 of query's dtype and shares key's batch, length and heads.
void check_value(const Tensor& query, const Tensor& key, const Tensor& value) {
  EMBER_CHECK(value.rank() == 4 && value.dtype() == query.dtype(), InvalidArgument)
      << kOp << ": expected a value of rank 4 (batch, length, heads, head_dim) and query's dtype "
      << dtype_name(query.dtype()) << ", got shape " << value.shape() << " " << dtype_name(value.dtype());
  EMBER_CHECK(key.rank() == 4 && value.shape()[0] == key.shape()[0] && value.shape()[1] == key.shape()[1] &&
                  value.shape()[2] == key.shape()[2],
              InvalidArgument)
      << kOp << ": key " << key.shape() << " and value " << value.shape()
      << " must share the batch, length and heads dimensions";
}

}  // namespace

Tensor dot_product_attention_weights(const Tensor& query, const Tensor& key, const DotProductAttentionOptions& options) {
  check_query_key(query, key);
  const Shape &q = query.shape(), &k = key.shape();
  const Shape scores_shape{q[0], q[2], q[1], k[1]};
  const double scale = options.scale.value_or(1.0 / std::sqrt(static_cast<double>(q[3])));

  // (batch, heads, query_len, head_dim) . (batch, heads, head_dim, key_len): one [query_len, key_len] block per
  // (batch, head) in the batched matmul.
  Tensor scores = matmul(transpose(query, {0, 2, 1, 3}), transpose(key, {0, 2, 3, 1}));
  scores = scores * full({}, scale, scores.dtype());
  if (options.bias) {
    check_broadcastable(*options.bias, scores_shape, "bias");
    scores = scores + cast(*options.bias, scores.dtype());
  }
  std::optional<Tensor> mask;
  if (options.mask) {
    check_broadcastable(*options.mask, scores_shape, "mask");
    mask = options.mask->dtype() == DType::Bool ? *options.mask
                                                : not_equal(*options.mask, zeros({}, options.mask->dtype()));
  }
  if (options.is_causal) {
    // Aligned top-left, as Keras's tril(ones((query_len, key_len))): query i sees keys 0..i.
    Tensor rows = reshape(range(0, static_cast<double>(q[1]), 1, DType::Int32), {q[1], 1});
    Tensor cols = reshape(range(0, static_cast<double>(k[1]), 1, DType::Int32), {1, k[1]});
    Tensor causal = greater_equal(rows, cols);
    mask = mask ? logical_and(*mask, causal) : causal;
  }
  if (mask) scores = where(*mask, scores, full({}, large_negative(scores.dtype()), scores.dtype()));
  return softmax(scores, -1);
}

Tensor dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                             const DotProductAttentionOptions& options) {
  check_value(query, key, value);
  check_query_key(query, key);
  if (!options.bias && !options.mask && key.shape()[1] > 0) {
    const double scale = options.scale.value_or(1.0 / std::sqrt(static_cast<double>(query.shape()[3])));
    const DType dt = query.dtype();
    if (dt == DType::Float32 || dt == DType::Float64) return fused_attention(query, key, value, scale, options.is_causal)[0];
    const DType f32 = DType::Float32;
    return cast(fused_attention(cast(query, f32), cast(key, f32), cast(value, f32), scale, options.is_causal)[0], dt);
  }
  Tensor probs = dot_product_attention_weights(query, key, options);
  return transpose(matmul(probs, transpose(value, {0, 2, 1, 3})), {0, 2, 1, 3});
}

std::vector<Tensor> fused_attention(const Tensor& query, const Tensor& key, const Tensor& value, double scale,
                                    bool is_causal) {
  check_value(query, key, value);
  check_query_key(query, key);
  EMBER_CHECK(query.dtype() == DType::Float32 || query.dtype() == DType::Float64, InvalidArgument)
      << "fused_attention: expected float32 or float64 inputs, got " << dtype_name(query.dtype());
  EMBER_CHECK(key.shape()[1] > 0, InvalidArgument) << "fused_attention: key " << key.shape() << " has no keys";
  const Shape &q = query.shape(), &v = value.shape();
  const OutputSpec specs[] = {{Shape{q[0], q[1], q[2], v[3]}, query.dtype()}, {Shape{q[0], q[2], q[1]}, query.dtype()}};
  const Tensor inputs[] = {query, key, value};
  return run_op(OpId::fused_attention, inputs, specs, FusedAttentionAttrs{scale, is_causal});
}

std::vector<Tensor> fused_attention_grad(const Tensor& query, const Tensor& key, const Tensor& value,
                                         const Tensor& output, const Tensor& logsumexp, const Tensor& grad_output,
                                         double scale, bool is_causal) {
  check_value(query, key, value);
  check_query_key(query, key);
  const Shape& q = query.shape();
  const Shape out_shape{q[0], q[1], q[2], value.shape()[3]};
  EMBER_CHECK(output.shape() == out_shape && grad_output.shape() == out_shape &&
                  logsumexp.shape() == Shape({q[0], q[2], q[1]}) && output.dtype() == query.dtype() &&
                  grad_output.dtype() == query.dtype() && logsumexp.dtype() == query.dtype(),
              InvalidArgument)
      << "fused_attention_grad: expected output and grad_output of shape " << out_shape << " and logsumexp of shape "
      << Shape({q[0], q[2], q[1]}) << ", all " << dtype_name(query.dtype()) << ", got " << output.shape() << ", "
      << grad_output.shape() << " and " << logsumexp.shape();
  const OutputSpec specs[] = {{query.shape(), query.dtype()}, {key.shape(), key.dtype()}, {value.shape(), value.dtype()}};
  const Tensor inputs[] = {query, key, value, output, logsumexp, grad_output};
  return run_op(OpId::fused_attention_grad, inputs, specs, FusedAttentionAttrs{scale, is_causal});
}

}  // namespace ember::ops
