#pragma once
// Losses of a custom training loop under a strategy (TF: tf.nn.compute_average_loss and
// tf.nn.scale_regularization_loss). Inside Strategy::run, Optimizer::apply sums the replicas' gradients, as TF's
// optimizer does, so each replica's loss must be its share of the global batch's loss: its per-example losses
// summed and divided by the global batch size, which compute_average_loss does.
//
//   strategy.run([&](const data::Element& b) {
//     GradientTape tape;
//     Tensor loss = distribute::compute_average_loss(loss_fn(b[1], model(b[0], true)),  // loss_fn: reduction "none"
//                                                    {.global_batch_size = 64});
//     loss = loss + distribute::scale_regularization_loss(regularization);
//     opt.apply(tape.gradient(loss, sources), vars);   // the replicas' sum: the global batch's gradient
//   }, batch);
#include <cstdint>
#include <optional>

#include "framework/core/tensor.h"

namespace ember::distribute {

struct ComputeAverageLossOptions {
  // Weights of the examples, multiplied into the losses (in float32, as TF does) after TF's squeeze or expand of
  // a trailing axis when the ranks differ by one; a scalar weighs every example alike. Undefined: none.
  Tensor sample_weight{};
  // The examples of one step over every replica. Unset: per_example_loss's first dimension times the replicas
  // in sync, which needs a replica context (inside Strategy::run) when a strategy's scope is active.
  std::optional<int64_t> global_batch_size{};
};

// The sum of the (weighted) per-example losses divided by the global batch size, in per_example_loss's dtype
// (TF: tf.nn.compute_average_loss); 0 when the global batch size is 0. per_example_loss must be a floating tensor
// of rank 1 or more (InvalidArgument otherwise), and the global batch size non-negative. Outside any strategy the
// replicas in sync are 1, so the loop that runs under a strategy gives the same loss alone.
Tensor compute_average_loss(const Tensor& per_example_loss, const ComputeAverageLossOptions& options = {});

// The sum of the regularization losses divided by the replicas in sync (TF: tf.nn.scale_regularization_loss):
// every replica adds the whole model's regularization, and the optimizer sums the replicas. A scope's strategy
// outside Strategy::run (the cross-replica context) is a FailedPrecondition, as TF's RuntimeError.
Tensor scale_regularization_loss(const Tensor& regularization_loss);

// value / num_replicas_in_sync when num_replicas_in_sync > 1, in value's dtype, else value (Keras 3:
// scale_loss_for_distribution): a replica's mean loss made its share of the global mean, whose gradients the
// replicas sum. fit scales its loss so; a Loss's mean reductions inside Strategy::run do too.
Tensor scale_loss_for_distribution(const Tensor& value, int num_replicas_in_sync);

// The replicas in sync of the Strategy::run this thread is inside; 1 outside every run.
int num_replicas_in_run();

}  // namespace ember::distribute
