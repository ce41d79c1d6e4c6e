#include "layers/seeded_noise.h"

#include <span>
#include <vector>

#include "framework/core/config_reader.h"
#include "framework/graph/trace.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/random.h"

namespace ember::layers {

namespace {

constexpr uint64_t kNoiseTfDefaultGraphSeed = 87654321, kNoiseTfMaxInt32 = 0x7fffffff;  // TF's, as random.cpp
// Philox counter blocks each seeded call owns (2^40 blocks = 2^42 samples): call k draws from block k << 40,
// so calls never overlap and the map of seed pairs in random.cpp does not grow per call.
constexpr int kNoiseCallShift = 40;

}  // namespace

Tensor SeededNoise::uniform(const Shape& shape, DType dtype) { return draw(false, shape, dtype, 0.0, 1.0); }

Tensor SeededNoise::normal(const Shape& shape, DType dtype, double mean, double stddev) {
  return draw(true, shape, dtype, mean, stddev);
}

Tensor SeededNoise::draw(bool normal, const Shape& shape, DType dtype, double a, double b) {
  if (!seed_) {
    if (normal) return random::normal(shape, {.mean = a, .stddev = b, .dtype = dtype, .seed = std::nullopt});
    return random::uniform(shape, {.minval = a, .maxval = b, .dtype = dtype, .seed = std::nullopt});
  }
  // Stateless draw keyed by the seed (TF's seed pair (DEFAULT_GRAPH_SEED, seed), as the seeded initializers
  // use), at a counter that advances per call. The counter lives on the host: a traced function draws each
  // call's numbers through a host node.
  return graph::host_call(normal ? "seeded_normal_noise" : "seeded_uniform_noise", {},
                          [this, normal, shape, dtype, a, b](std::span<const Tensor>) {
                            const uint64_t key = kNoiseTfDefaultGraphSeed | ((*seed_ % kNoiseTfMaxInt32) << 32);
                            const uint64_t counter = seeded_calls_++ << kNoiseCallShift;
                            const OpId op = normal ? OpId::random_normal : OpId::random_uniform;
                            return std::vector<Tensor>{
                                run_op(op, {}, OutputSpec{shape, dtype}, RandomAttrs{shape, dtype, key, counter, a, b})};
                          },
                          [this, calls = seeded_calls_] { seeded_calls_ = calls; })[0];
}

std::optional<uint64_t> seed_from_config(const nlohmann::json& c, const std::string& who) {
  std::optional<int64_t> seed = ::ember::detail::config_optional_int(c, "seed", who);
  if (!seed) return std::nullopt;
  EMBER_CHECK(*seed >= 0, InvalidArgument) << who << ": config \"seed\" must be null or an integer >= 0, got " << *seed;
  return static_cast<uint64_t>(*seed);
}

nlohmann::json seed_to_config(const std::optional<uint64_t>& seed) {
  return seed ? nlohmann::json(*seed) : nlohmann::json(nullptr);
}

}  // namespace ember::layers
