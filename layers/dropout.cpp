#include "layers/dropout.h"

#include <cmath>

#include "framework/core/config_reader.h"
#include "framework/ops/creation.h"
#include "framework/ops/elementwise.h"

namespace ember::layers {

using ::ember::detail::config_optional_int;
using ::ember::detail::config_required_double;


namespace {

// (None, 1, 3): -1 prints as None.
std::string shape_string(const std::vector<int64_t>& dims) { return Shape(dims).to_keras_string(); }

}  // namespace

Dropout::Dropout(double rate, DropoutOptions options)
    : Layer("dropout", {options.name, options.dtype, options.trainable}),
      rate_(rate),
      options_(std::move(options)),
      noise_(options_.seed) {
  supports_masking_ = true;  // passes its input's mask on (Keras)
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

Tensor Dropout::call(const Tensor& x, bool training) {
  if (!training || rate_ == 0) return x;
  // keep = u >= rate; x * (keep / (1 - rate)) equals TF's (x * scale) * keep bit for bit, and costs one
  // full-size multiply when the noise shape is smaller than the input.
  const Shape ns = noise_shape_for(x.shape());
  Tensor keep = ops::greater_equal(noise_.uniform(ns, DType::Float32), ops::full({}, rate_, DType::Float32));
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
