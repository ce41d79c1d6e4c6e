#include "framework/distribute/replica_loss.h"

#include <string>

#include "framework/core/error.h"
#include "framework/distribute/strategy.h"
#include "framework/ops/array.h"
#include "framework/ops/broadcast.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"

namespace ember::distribute {

namespace {

// TF's in_cross_replica_context: in a strategy's scope, outside its run.
void check_replica_context(const char* who) {
  EMBER_CHECK(!has_strategy() || get_replica_context(), FailedPrecondition)
      << who << ": called in a strategy's cross-replica context (its scope, outside strategy.run), where it "
      << "expects a replica context; call it inside strategy.run"
      << (std::string(who) == "compute_average_loss" ? ", or pass .global_batch_size" : "");
}

// TF's _get_num_replicas_in_sync: the replica context's, else the scope's strategy's, else 1.
int replicas_in_sync() {
  if (const auto ctx = get_replica_context()) return ctx->num_replicas_in_sync();
  if (const auto s = get_strategy()) return s->num_replicas_in_sync();
  return 1;
}

void check_floating(const Tensor& t, const char* who, const char* what) {
  EMBER_CHECK(t.defined(), InvalidArgument) << who << ": " << what << " is an undefined tensor";
  EMBER_CHECK(is_floating(t.dtype()), InvalidArgument)
      << who << ": " << what << " must be a floating tensor, got " << dtype_name(t.dtype()) << " " << t.shape();
}

// TF's scale_losses_by_sample_weight: both in float32, the weights' trailing axis squeezed or added when the ranks
// differ by one (a scalar weight as it is), multiplied with broadcasting.
Tensor weighted(const Tensor& losses, const Tensor& sample_weight) {
  const char* who = "compute_average_loss";
  check_floating(sample_weight, who, "sample_weight");
  const Tensor l = ops::cast(losses, DType::Float32);
  Tensor w = ops::cast(sample_weight.to(losses.device()), DType::Float32);
  const int64_t lr = l.rank(), wr = w.rank();
  if (wr > 0 && wr - lr == 1) {
    EMBER_CHECK(w.shape()[wr - 1] == 1, InvalidArgument)
        << who << ": sample_weight of shape " << w.shape() << " has one axis more than per_example_loss "
        << l.shape() << ", so its last axis is squeezed, but that axis is not 1";
    w = ops::squeeze(w, {wr - 1});
  } else if (wr > 0 && lr - wr == 1) {
    w = ops::expand_dims(w, wr);
  }
  try {
    (void)broadcast_shapes("multiply", l.shape(), w.shape());
  } catch (const InvalidArgument&) {
    throw make_error<InvalidArgument>(who, ": sample_weight of shape ", sample_weight.shape(),
                                      " does not broadcast to per_example_loss of shape ", losses.shape());
  }
  return l * w;
}

}  // namespace

Tensor compute_average_loss(const Tensor& per_example_loss, const ComputeAverageLossOptions& options) {
  const char* who = "compute_average_loss";
  check_floating(per_example_loss, who, "per_example_loss");
  EMBER_CHECK(per_example_loss.rank() >= 1, InvalidArgument)
      << who << ": per_example_loss must be a tensor of rank 1 or more (one loss per example), got a scalar; pass "
      << "the losses before their reduction (a Loss with reduction \"none\")";
  const DType dtype = per_example_loss.dtype();
  const Tensor losses = options.sample_weight.defined()
                            ? ops::cast(weighted(per_example_loss, options.sample_weight), dtype)
                            : per_example_loss;
  int64_t global_batch_size = 0;
  if (options.global_batch_size) {
    global_batch_size = *options.global_batch_size;
    EMBER_CHECK(global_batch_size >= 0, InvalidArgument)
        << who << ": global_batch_size must be non-negative, got " << global_batch_size;
  } else {
    check_replica_context(who);
    global_batch_size = per_example_loss.shape()[0] * replicas_in_sync();
  }
  return ops::div_no_nan(ops::reduce_sum(losses),
                         Tensor::scalar_of(static_cast<double>(global_batch_size), dtype, losses.device()));
}

Tensor scale_regularization_loss(const Tensor& regularization_loss) {
  const char* who = "scale_regularization_loss";
  check_replica_context(who);
  check_floating(regularization_loss, who, "regularization_loss");
  const Tensor sum = ops::reduce_sum(regularization_loss);
  return ops::div(sum, Tensor::scalar_of(replicas_in_sync(), sum.dtype(), sum.device()));
}

Tensor scale_loss_for_distribution(const Tensor& value, int num_replicas_in_sync) {
  if (num_replicas_in_sync <= 1) return value;
  return value * Tensor::scalar_of(1.0 / num_replicas_in_sync, value.dtype(), value.device());
}

int num_replicas_in_run() {
  const auto ctx = get_replica_context();
  return ctx ? ctx->num_replicas_in_sync() : 1;
}

}  // namespace ember::distribute
