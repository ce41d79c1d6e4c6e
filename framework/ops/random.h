#pragma once
// Random tensors from a counter-based Philox4x32-10 generator (TF: tf.random.*): a seed gives the
// same numbers whatever the thread count or device.
#include <cstdint>
#include <optional>

#include "framework/core/tensor.h"

namespace ember::random {

// Sets the global seed (TF: tf.random.set_seed); ops without their own seed then draw a
// deterministic sequence from it. Resets the per-op counter.
void set_seed(uint64_t seed);

struct NormalOptions {
  double mean = 0.0;
  double stddev = 1.0;
  DType dtype = DType::Float32;
  std::optional<uint64_t> seed;  // op seed (TF semantics together with the global seed)
};
struct UniformOptions {
  double minval = 0.0;
  double maxval = 1.0;
  DType dtype = DType::Float32;
  std::optional<uint64_t> seed;
};

// Normal(mean, stddev) samples.
Tensor normal(const Shape& shape, NormalOptions options = {});
// Uniform samples in [minval, maxval).
Tensor uniform(const Shape& shape, UniformOptions options = {});
// Normal samples redrawn until within two standard deviations of the mean.
Tensor truncated_normal(const Shape& shape, NormalOptions options = {});
// A random permutation of 0..n-1 (int64), for shuffling.
Tensor permutation(int64_t n, std::optional<uint64_t> seed = std::nullopt);

}  // namespace ember::random
