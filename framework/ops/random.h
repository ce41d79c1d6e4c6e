#pragma once
// Random tensors from a counter-based Philox4x32-10 generator (TF: tf.random.*): a seed gives the
// same numbers whatever the thread count or device.
#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "framework/core/tensor.h"
#include "framework/ops/attrs.h"

namespace ember::random {

// Sets the global seed (TF: tf.random.set_seed); ops without their own seed then draw a
// deterministic sequence from it. Resets the per-op counter.
void set_seed(uint64_t seed);

// The global generator's position: set_seed's seed, how many op seeds unseeded ops have drawn, and where
// each seeded op's sequence stands. A training checkpoint saves it so a resumed run draws what an
// uninterrupted one would (shuffles, dropout masks).
struct GeneratorState {
  std::optional<uint64_t> global_seed;
  uint64_t op_seed_counter = 0;
  std::vector<std::array<uint64_t, 3>> next_blocks;  // (seed1, seed2, next unused Philox block)
};
GeneratorState get_global_generator_state();
void set_global_generator_state(const GeneratorState& state);

struct NormalOptions {
  double mean = 0.0;
  double stddev = 1.0;
  DType dtype = DType::Float32;
  std::optional<uint64_t> seed{};  // op seed (TF semantics together with the global seed)
};
struct UniformOptions {
  double minval = 0.0;
  double maxval = 1.0;
  DType dtype = DType::Float32;
  std::optional<uint64_t> seed{};
};

// Normal(mean, stddev) samples.
Tensor normal(const Shape& shape, NormalOptions options = {});
// Uniform samples in [minval, maxval).
Tensor uniform(const Shape& shape, UniformOptions options = {});
// Normal samples redrawn until within two standard deviations of the mean.
Tensor truncated_normal(const Shape& shape, NormalOptions options = {});
// A random permutation of 0..n-1 (int64), for shuffling.
Tensor permutation(int64_t n, std::optional<uint64_t> seed = std::nullopt);

namespace detail {
// Draws a new key and counter into a random op's attributes, as a fresh call with its op seed would: a
// traced function's random ops give new numbers on every call, in eager execution's sequence.
void redraw(RandomAttrs& attrs);
}  // namespace detail

}  // namespace ember::random
