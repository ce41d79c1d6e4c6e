#include "layers/layer_normalization.h"

#include <algorithm>

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/config_reader.h"
#include "framework/ops/array.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"

namespace ember::layers {

using ::ember::detail::config_bool;
using ::ember::detail::config_double;
using ::ember::detail::config_int_list;

namespace {

DType ln_stats_dtype(DType d) { return d == DType::Float16 || d == DType::BFloat16 ? DType::Float32 : d; }
Tensor ln_as_dtype(const Tensor& t, DType d) { return t.dtype() == d ? t : ops::cast(t, d); }

}  // namespace

LayerNormalization::LayerNormalization(LayerNormalizationOptions options)
    : Layer("layer_normalization", {options.name, options.dtype, options.trainable}), options_(std::move(options)) {
  supports_masking_ = true;  // passes its input's mask on (Keras)
  EMBER_CHECK(!options_.axis.empty(), InvalidArgument)
      << "LayerNormalization '" << name() << "': axis must name at least one axis";
  std::sort(options_.axis.begin(), options_.axis.end());  // as Keras's build
}

std::vector<int64_t> LayerNormalization::positive_axes(int64_t rank) const {
  std::vector<int64_t> out;
  for (int64_t a : options_.axis) {
    EMBER_CHECK(a >= -rank && a < rank, InvalidArgument)
        << "LayerNormalization '" << name() << "': axis " << a << " is out of range for an input of rank " << rank;
    out.push_back(a < 0 ? a + rank : a);
  }
  std::vector<int64_t> sorted = out;
  std::sort(sorted.begin(), sorted.end());
  EMBER_CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end(), InvalidArgument)
      << "LayerNormalization '" << name() << "': axis lists the same dimension twice for an input of rank " << rank;
  return out;
}

void LayerNormalization::build(const Shape& input_shape) {
  Shape param_shape;
  for (int64_t a : positive_axes(input_shape.rank())) {
    EMBER_CHECK(input_shape[a] > 0, InvalidArgument)
        << "LayerNormalization '" << name() << "': the size of axis " << a << " must be known, got input shape "
        << input_shape;
    param_shape.push_back(input_shape[a]);
  }
  if (options_.scale || options_.rms_scaling)
    gamma_ = add_weight("gamma", param_shape, options_.gamma_initializer, true, options_.gamma_regularizer);
  if (options_.center && !options_.rms_scaling)
    beta_ = add_weight("beta", param_shape, options_.beta_initializer, true, options_.beta_regularizer);
}

void LayerNormalization::check_input_shape(const std::vector<Shape>& shapes) const {
  const Shape& built = build_input_shapes().at(0);
  const Shape& s = shapes.at(0);
  bool ok = shapes.size() == 1 && s.rank() == built.rank();
  if (ok) {
    for (int64_t a : positive_axes(s.rank())) ok = ok && s[a] == built[a];
  }
  EMBER_CHECK(ok, InvalidArgument) << "LayerNormalization '" << name() << "': expected an input like " << built
                                   << " (the shape it was built for) on the normalised axes, got " << s;
}

Tensor LayerNormalization::call(const Tensor& x, bool training) {
  const int64_t rank = x.rank();
  const std::vector<int64_t> axes = positive_axes(rank);
  const DType dt = ln_stats_dtype(x.dtype());
  const Tensor xs = ln_as_dtype(x, dt);
  // gamma / beta reshaped to broadcast against x: the normalised dimensions in place, 1 elsewhere.
  Shape bshape(std::vector<int64_t>(static_cast<size_t>(rank), 1));
  for (int64_t a : axes) bshape[a] = x.shape()[a];
  auto param = [&](const Variable& v) { return ops::reshape(ln_as_dtype(v, dt), bshape); };

  if (options_.rms_scaling) {
    Tensor y = xs * ops::rsqrt(ops::reduce_variance(xs, axes, true) + options_.epsilon);
    return ln_as_dtype(gamma_.defined() ? y * param(gamma_) : y, compute_dtype());
  }
  // Keras 3's ops.layer_normalization: tf.nn.moments, then x * inv + (beta - mean * inv).
  Tensor mean = ops::reduce_mean(xs, axes, true);
  Tensor variance = ops::reduce_mean(ops::squared_difference(xs, ops::stop_gradient(mean)), axes, true);
  Tensor inv = ops::rsqrt(variance + options_.epsilon);
  if (gamma_.defined()) inv = inv * param(gamma_);
  Tensor shift = -mean * inv;
  if (beta_.defined()) shift = shift + param(beta_);
  return ln_as_dtype(xs * inv + shift, compute_dtype());
}

Shape LayerNormalization::compute_output_shape(const Shape& input_shape) {
  positive_axes(input_shape.rank());
  return input_shape;
}

nlohmann::json LayerNormalization::get_config() const {
  nlohmann::json c = base_config();
  c["axis"] = options_.axis.size() == 1 ? nlohmann::json(options_.axis[0]) : nlohmann::json(options_.axis);
  c["epsilon"] = options_.epsilon;
  c["center"] = options_.center;
  c["scale"] = options_.scale;
  c["rms_scaling"] = options_.rms_scaling;
  c["beta_initializer"] = options_.beta_initializer.to_json();
  c["gamma_initializer"] = options_.gamma_initializer.to_json();
  c["beta_regularizer"] = options_.beta_regularizer.to_json();
  c["gamma_regularizer"] = options_.gamma_regularizer.to_json();
  c["beta_constraint"] = nullptr;
  c["gamma_constraint"] = nullptr;
  return c;
}

LayerPtr LayerNormalization::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const std::string who = "LayerNormalization '" + base.name + "'";
  LayerNormalizationOptions o;
  o.axis = config_int_list(c, "axis", o.axis, who);
  o.epsilon = config_double(c, "epsilon", 1e-3, who);
  o.center = config_bool(c, "center", true, who);
  o.scale = config_bool(c, "scale", true, who);
  o.rms_scaling = config_bool(c, "rms_scaling", false, who);
  if (c.contains("beta_initializer")) o.beta_initializer = Initializer::from_json(c["beta_initializer"]);
  if (c.contains("gamma_initializer")) o.gamma_initializer = Initializer::from_json(c["gamma_initializer"]);
  if (c.contains("beta_regularizer")) o.beta_regularizer = Regularizer::from_json(c["beta_regularizer"]);
  if (c.contains("gamma_regularizer")) o.gamma_regularizer = Regularizer::from_json(c["gamma_regularizer"]);
  o.name = base.name;
  o.dtype = base.dtype;
  o.trainable = base.trainable;
  return std::make_shared<LayerNormalization>(o);
}

EMBER_REGISTER_LAYER(LayerNormalization);

}  // namespace ember::layers
