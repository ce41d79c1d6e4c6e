#pragma once
// ember::debugging (TF: tf.debugging.enable_check_numerics).
namespace ember::debugging {

// From now on the first op (forward or backward) whose output holds NaN or Inf throws InvalidArgument
// naming the op, its input shapes and dtypes, and the pass it ran in.
void enable_check_numerics();
void disable_check_numerics();

}  // namespace ember::debugging
