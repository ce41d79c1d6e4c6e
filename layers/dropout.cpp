#include "layers/dropout.h"

#include <cmath>

#include "framework/core/config_reader.h"
#include "framework/graph/trace.h"
#include "framework/ops/creation.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/random.h"

namespace ember::layers {

using ::ember::detail::config_optional_int;
using ::ember::detail::config_required_double;


namespace {

constexpr uint64_t kTfDefaultGraphSeed = 87654321, kTfMaxInt32 = 0x7fffffff;  // TF's, as random.cpp uses them
// Philox counter blocks each seeded call owns (2^40 blocks = 2^42 samples): call k draws from block k << 40,
// so calls never overlap and the map of seed pairs in random.cpp does not grow per call.
constexpr int kCallShift = 40;

// (None, 1, 3): -1 prints as None.
std::string shape_string(const std::vector<int64_t>& dims) { return Shape(dims).to_keras_string(); }

}  // namespace

Dropout::Dropout(double rate, DropoutOptions options)
    : Layer("dropout", {options.name, options.dtype, options.trainable}), rate_(rate), options_(std::move(options)) {
  EMBER_CHECK(rate >= 0 && rate < 1, InvalidArgument)
      << "Dropout '" << name() << "': rate must be in [0, 1), got " << rate;
  if (options_.noise_shape) {
    for (int64_t d : *options_.noise_shape)
      EMBER_CHECK(d == -1 || d > 0, InvalidArgument)
          << "Dropout '" << name() << "': noise_shape entries must be positive or -1 (None), got "
          << shape_string(*options_.noise_shape);
  }
}

Shape Dropout::noise_shape_for(const Shape& in) const {
  if (!options_.noise_shape) return in;
  const std::vector<int64_t>& ns = *options_.noise_shape;
  EMBER_CHECK(static_cast<int64_t>(ns.size()) == in.rank(), InvalidArgument)
      << "Dropout '" << name() << "': noise_shape " << shape_string(ns) << " has rank " << ns.size()
      << " but the input has shape " << in;
  Shape out = in;
  for (int64_t i = 0; i < in.rank(); ++i) {
    if (ns[i] < 0) continue;
    EMBER_CHECK(ns[i] == 1 || ns[i] == in[i], InvalidArgument)
        << "Dropout '" << name() << "': noise_shape " << shape_string(ns) << " does not broadcast to the input shape "
        << in;
    out[i] = ns[i];
  }
  return out;
}

Tensor Dropout::uniform_noise(const Shape& shape, DType dtype) {
  if (!options_.seed) return random::uniform(shape, {.minval = 0.0, .maxval = 1.0, .dtype = dtype, .seed = std::nullopt});
  // Stateless draw keyed by the seed (TF's seed pair (DEFAULT_GRAPH_SEED, seed), as the seeded initializers
  // use), at a counter that advances per call: a seeded layer's masks depend only on its seed and how many
  // times it dropped, like Keras 3's SeedGenerator, not on other random ops or other layers.
  // The call counter lives on the host: a traced function draws each call's mask through a host node.
  return graph::host_call("dropout_noise", {}, [this, shape, dtype](std::span<const Tensor>) {
    const uint64_t key = kTfDefaultGraphSeed | ((*options_.seed % kTfMaxInt32) << 32);
    const uint64_t counter = seeded_calls_++ << kCallShift;
    return std::vector<Tensor>{
        run_op(OpId::random_uniform, {}, OutputSpec{shape, dtype}, RandomAttrs{shape, dtype, key, counter, 0.0, 1.0})};
  })[0];
}

Tensor Dropout::call(const Tensor& x, bool training) {
  if (!training || rate_ == 0) return x;
  // keep = u >= rate; x * (keep / (1 - rate)) equals TF's (x * scale) * keep bit for bit, and costs one
  // full-size multiply when the noise shape is smaller than the input.
  const Shape ns = noise_shape_for(x.shape());
  Tensor keep = ops::greater_equal(uniform_noise(ns, DType::Float32), ops::full({}, rate_, DType::Float32));
  Tensor factor = ops::cast(keep, x.dtype()) * (1.0 / (1.0 - rate_));
  return x * factor;
}

nlohmann::json Dropout::get_config() const {
  nlohmann::json c = base_config();
  c["rate"] = rate_;
  c["seed"] = options_.seed ? nlohmann::json(*options_.seed) : nlohmann::json(nullptr);
  if (options_.noise_shape) {
    nlohmann::json ns = nlohmann::json::array();
    for (int64_t d : *options_.noise_shape) ns.push_back(d < 0 ? nlohmann::json(nullptr) : nlohmann::json(d));
    c["noise_shape"] = ns;
  } else {
    c["noise_shape"] = nullptr;
  }
  return c;
}

LayerPtr Dropout::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const std::string who = "Dropout '" + base.name + "'";
  DropoutOptions o;
  if (auto seed = config_optional_int(c, "seed", who)) {
    EMBER_CHECK(*seed >= 0, InvalidArgument) << who << ": config \"seed\" must be >= 0, got " << *seed;
    o.seed = static_cast<uint64_t>(*seed);
  }
  if (c.contains("noise_shape") && !c["noise_shape"].is_null()) {
    const nlohmann::json& n = c["noise_shape"];
    EMBER_CHECK(n.is_array(), InvalidArgument)
        << who << ": config \"noise_shape\" must be a list of integers (null for the input's), got " << n.dump();
    std::vector<int64_t> ns;
    for (const nlohmann::json& d : n) {
      EMBER_CHECK(d.is_null() || d.is_number_integer(), InvalidArgument)
          << who << ": config \"noise_shape\" must be a list of integers (null for the input's), got " << n.dump();
      ns.push_back(d.is_null() ? -1 : d.get<int64_t>());
    }
    o.noise_shape = ns;
  }
  o.name = base.name;
  o.dtype = base.dtype;
  o.trainable = base.trainable;
  return std::make_shared<Dropout>(config_required_double(c, "rate", who), o);
}

EMBER_REGISTER_LAYER(Dropout);

}  // namespace ember::layers
