// Front end of the random ops: TF 2's seed rules (tf.random.set_seed, get_seed), validation, and the
// choice of Philox key and counter each call draws from.
#include "framework/ops/random.h"

#include <cmath>
#include <map>
#include <mutex>
#include <random>
#include <utility>
#include <vector>

#include "framework/core/philox.h"
#include "framework/core/trace_hooks.h"
#include "framework/ops/dispatch.h"

namespace ember::random {

namespace {

constexpr uint64_t kDefaultGraphSeed = 87654321;  // TF's DEFAULT_GRAPH_SEED
constexpr uint64_t kMaxInt32 = 0x7fffffff;        // TF's _MAXINT32: seeds are taken modulo it
// Counter high word of permutation's stream, so that its draws never coincide with a tensor op's.
constexpr uint64_t kPermutationStream = 0x7065726d75746531ull;

struct SeedState {
  std::mutex mu;
  std::optional<uint64_t> global_seed;
  uint64_t op_seed_counter = 0;
  // Per (global, op) seed pair, the next unused Philox block: repeated calls with the same pair draw
  // fresh numbers (TF's stateful kernels advance their generator the same way).
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> next_block;
};

SeedState& state() {
  static SeedState s;
  return s;
}

// Where one call draws from: Philox key and the first counter block it owns.
struct Stream {
  uint64_t key;
  uint64_t counter;
};

uint64_t nondeterministic_key() {
  static std::mutex mu;
  static std::random_device device;
  std::lock_guard<std::mutex> lock(mu);
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

// TF's random_seed.get_seed followed by GuardedPhiloxRandom::ReserveSamples128: resolves the seed pair,
// then reserves `blocks` Philox blocks of that pair's sequence for this call.
Stream reserve(std::optional<uint64_t> op_seed, uint64_t blocks) {
  SeedState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.global_seed && !op_seed) return {nondeterministic_key(), 0};
  uint64_t seed1 = s.global_seed ? *s.global_seed % kMaxInt32 : kDefaultGraphSeed;
  uint64_t seed2 = op_seed ? *op_seed % kMaxInt32 : s.op_seed_counter++ % kMaxInt32;
  if (seed1 == 0 && seed2 == 0) seed2 = kMaxInt32;  // TF: (0, 0) would mean "nondeterministic"
  const uint64_t key = seed1 | (seed2 << 32);
  // A counter-made op seed is fresh on each call: nothing to remember (dropout calls this every step).
  if (!op_seed) return {key, 0};
  uint64_t& next = s.next_block[{seed1, seed2}];
  Stream out{key, next};
  next += blocks;
  return out;
}

// Philox blocks per call: each block yields four 32-bit or two 64-bit samples (TF's kResultElementCount).
uint64_t blocks_for(const Shape& shape, DType dtype) {
  uint64_t per_block = dtype_size(dtype) == 8 ? 2 : 4;
  return (static_cast<uint64_t>(shape.num_elements()) + per_block - 1) / per_block;
}

void check_random_shape(const Shape& shape, const char* op) {
  for (int64_t d : shape)
    EMBER_CHECK(d >= 0, InvalidArgument) << op << ": shape " << shape << " has a negative dimension";
}

void check_float_dtype(DType dtype, const char* op) {
  EMBER_CHECK(is_floating(dtype), InvalidArgument)
      << op << ": dtype " << dtype << " is not supported (expected float32, float64, float16 or bfloat16)";
}

Tensor run_random(OpId op, const Shape& shape, DType dtype, std::optional<uint64_t> seed, double a, double b) {
  Stream stream = reserve(seed, blocks_for(shape, dtype));
  RandomAttrs attrs{shape, dtype, stream.key, stream.counter, a, b, seed};
  return run_op(op, {}, OutputSpec{shape, dtype}, std::move(attrs));
}

Tensor normal_like(OpId op, const char* name, const Shape& shape, const NormalOptions& o) {
  check_random_shape(shape, name);
  check_float_dtype(o.dtype, name);
  EMBER_CHECK(o.stddev >= 0, InvalidArgument) << name << ": stddev must be >= 0, got " << o.stddev;
  return run_random(op, shape, o.dtype, o.seed, o.mean, o.stddev);
}

}  // namespace

GeneratorState get_global_generator_state() {
  SeedState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  GeneratorState out{s.global_seed, s.op_seed_counter, {}};
  for (const auto& [pair, next] : s.next_block) out.next_blocks.push_back({pair.first, pair.second, next});
  return out;
}

void set_global_generator_state(const GeneratorState& in) {
  SeedState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.global_seed = in.global_seed;
  s.op_seed_counter = in.op_seed_counter;
  s.next_block.clear();
  for (const auto& b : in.next_blocks) s.next_block[{b[0], b[1]}] = b[2];
}

void set_seed(uint64_t seed) {
  SeedState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.global_seed = seed;
  s.op_seed_counter = 0;
  s.next_block.clear();
}

Tensor normal(const Shape& shape, NormalOptions options) {
  return normal_like(OpId::random_normal, "random_normal", shape, options);
}

Tensor truncated_normal(const Shape& shape, NormalOptions options) {
  return normal_like(OpId::truncated_normal, "truncated_normal", shape, options);
}

Tensor uniform(const Shape& shape, UniformOptions o) {
  check_random_shape(shape, "random_uniform");
  if (o.dtype == DType::Int32 || o.dtype == DType::Int64) {
    const double lo = o.dtype == DType::Int32 ? -2147483648.0 : -9223372036854775808.0;
    const double hi_exclusive = -lo;
    EMBER_CHECK(o.minval == std::trunc(o.minval) && o.maxval == std::trunc(o.maxval), InvalidArgument)
        << "random_uniform: minval and maxval must be whole numbers for dtype " << o.dtype << ", got [" << o.minval
        << ", " << o.maxval << ")";
    EMBER_CHECK(o.minval < o.maxval, InvalidArgument)
        << "random_uniform: need minval < maxval for dtype " << o.dtype << ", got [" << o.minval << ", " << o.maxval
        << ")";
    EMBER_CHECK(o.minval >= lo && o.maxval < hi_exclusive, InvalidArgument)
        << "random_uniform: [" << o.minval << ", " << o.maxval << ") does not fit dtype " << o.dtype;
  } else {
    EMBER_CHECK(is_floating(o.dtype), InvalidArgument)
        << "random_uniform: dtype " << o.dtype
        << " is not supported (expected float32, float64, float16, bfloat16, int32 or int64)";
    EMBER_CHECK(std::isfinite(o.minval) && std::isfinite(o.maxval) && o.minval <= o.maxval, InvalidArgument)
        << "random_uniform: need finite minval <= maxval, got [" << o.minval << ", " << o.maxval << ")";
  }
  return run_random(OpId::random_uniform, shape, o.dtype, o.seed, o.minval, o.maxval);
}

void detail::redraw(RandomAttrs& attrs) {
  Stream stream = reserve(attrs.op_seed, blocks_for(attrs.shape, attrs.dtype));
  attrs.key = stream.key;
  attrs.counter = stream.counter;
}

Tensor permutation(int64_t n, std::optional<uint64_t> seed) {
  EMBER_CHECK(n >= 0, InvalidArgument) << "permutation: n must be >= 0, got " << n;
  // Drawn on the host: a traced function draws it again on every call, as the unseeded ops do.
  if (!seed && ember::detail::t_tensor_tracer)
    return ember::detail::t_tensor_tracer->host_value("random_permutation", [n] { return permutation(n); });
  // Fisher-Yates takes n - 1 draws of 64 bits, two per Philox block. An explicit seed alone fixes the
  // permutation (a shuffle seeded per epoch must repeat); without one it draws like any unseeded op.
  const uint64_t draws = n > 1 ? static_cast<uint64_t>(n - 1) : 0;
  Stream stream = seed ? Stream{*seed, 0} : reserve(std::nullopt, (draws + 1) / 2);
  std::vector<int64_t> p(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) p[static_cast<size_t>(i)] = i;
  philox::Uint4 bits{};
  for (uint64_t k = 0; k < draws; ++k) {
    if (k % 2 == 0) bits = philox::block(stream.key, stream.counter + k / 2, kPermutationStream);
    const uint32_t* w = bits.v + 2 * (k % 2);
    const uint64_t x = w[0] | (static_cast<uint64_t>(w[1]) << 32);
    const uint64_t i = static_cast<uint64_t>(n) - 1 - k;
    // Lemire's multiply-shift maps x onto [0, i]; its bias, (i + 1) / 2^64, is far below any test's reach.
    const auto j = static_cast<uint64_t>((static_cast<unsigned __int128>(x) * (i + 1)) >> 64);
    std::swap(p[i], p[j]);
  }
  return Tensor::from_vector<int64_t>(p, Shape{n}, Device::cpu()).to(default_device());
}

}  // namespace ember::random
