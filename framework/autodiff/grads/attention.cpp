// Backward formula of the fused attention: its own kernel (FlashAttention-2's backward, which recomputes the
// probabilities from the saved logsumexp), unless a tape records ops on the inputs (a higher-order gradient): then
// it is written with differentiable ops over the probabilities, so that second derivatives are right.
#include "framework/autodiff/grad_registry.h"
#include "framework/autodiff/gradient_tape.h"
#include "framework/ops/array.h"
#include "framework/ops/attention.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/linalg.h"
#include "framework/ops/reduce.h"

namespace ember {
namespace {

// With P the probabilities (batch, heads, query_len, key_len) and all tensors seen per head:
// dv = P^T do, dS = P * (do v^T - rowsum(P * do v^T)), dq = scale dS k, dk = scale dS^T q.
std::vector<Tensor> differentiable_grad(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& dout,
                                        const FusedAttentionAttrs& a) {
  const std::vector<int64_t> heads_first{0, 2, 1, 3};
  const Tensor p = ops::dot_product_attention_weights(q, k, {.scale = a.scale, .is_causal = a.causal});
  const Tensor dot = ops::transpose(dout, heads_first);
  const Tensor dv = ops::matmul(p, dot, {.transpose_a = true});
  const Tensor dp = ops::matmul(dot, ops::transpose(v, heads_first), {.transpose_b = true});
  const Tensor ds = p * (dp - ops::reduce_sum(dp * p, int64_t{-1}, /*keepdims=*/true)) * a.scale;
  const Tensor dq = ops::matmul(ds, ops::transpose(k, heads_first));
  const Tensor dk = ops::matmul(ds, ops::transpose(q, heads_first), {.transpose_a = true});
  return {ops::transpose(dq, heads_first), ops::transpose(dk, heads_first), ops::transpose(dv, heads_first)};
}

std::vector<Tensor> fused_attention_grad(const GradContext& ctx) {
  const auto& a = std::get<FusedAttentionAttrs>(ctx.attrs);
  const Tensor &q = ctx.inputs[0], &k = ctx.inputs[1], &v = ctx.inputs[2];
  const Tensor& dout = ctx.grads[0];
  const Tensor watched[] = {q, k, v, dout};
  if (any_tape_records(watched)) return differentiable_grad(q, k, v, dout, a);
  return ops::fused_attention_grad(q, k, v, ctx.outputs[0], ctx.outputs[1], dout, a.scale, a.causal);
}

}  // namespace

EMBER_REGISTER_GRADIENT(fused_attention, fused_attention_grad);

}  // namespace ember
