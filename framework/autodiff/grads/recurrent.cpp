// Backward formulas of the whole-sequence recurrent ops: their own backward kernels, which read the state the
// forward saved (its last output). Those kernels are not differentiable themselves, so a tape recording the backward (a
// second derivative) is refused rather than given a wrong answer; the per-step layers give second derivatives.
#include "framework/autodiff/grad_registry.h"
#include "framework/autodiff/gradient_tape.h"
#include "framework/core/error.h"
#include "framework/ops/recurrent.h"

namespace ember {
namespace {

void rnn_check_first_order(const GradContext& ctx) {
  EMBER_CHECK(!any_tape_records(ctx.inputs) && !any_tape_records(ctx.grads), Unimplemented)
      << op_name(ctx.op) << ": no second derivatives through the fused sequence op (a tape records its backward); "
      << "build the LSTM or GRU with recurrent_dropout, unroll or a non-default activation to take the per-step path";
}

// The forward's sequence_lengths (its optional last input), or none.
Tensor rnn_lengths(const GradContext& ctx, size_t inputs) { return ctx.inputs.size() > inputs ? ctx.inputs[inputs] : Tensor(); }

// The gradients of the weights and states, and none for the lengths (integers) when given.
std::vector<Tensor> rnn_grads(std::vector<Tensor> grads, const GradContext& ctx) {
  grads.resize(ctx.inputs.size());
  return grads;
}

std::vector<Tensor> lstm_sequence_grad(const GradContext& ctx) {
  rnn_check_first_order(ctx);
  const auto& in = ctx.inputs;
  return rnn_grads(ops::lstm_sequence_grad(in[0], in[1], in[2], in[3], in[4], in[5], ctx.outputs[0], ctx.outputs[3],
                                           ctx.grads[0], ctx.grads[1], ctx.grads[2], rnn_lengths(ctx, 6)),
                   ctx);
}

std::vector<Tensor> gru_sequence_grad(const GradContext& ctx) {
  rnn_check_first_order(ctx);
  const auto& in = ctx.inputs;
  return rnn_grads(ops::gru_sequence_grad(in[0], in[1], in[2], in[3], in[4], ctx.outputs[0], ctx.outputs[2],
                                          ctx.grads[0], ctx.grads[1], std::get<RnnSequenceAttrs>(ctx.attrs).reset_after,
                                          rnn_lengths(ctx, 5)),
                   ctx);
}

}  // namespace

EMBER_REGISTER_GRADIENT(lstm_sequence, lstm_sequence_grad);
EMBER_REGISTER_GRADIENT(gru_sequence, gru_sequence_grad);

}  // namespace ember
