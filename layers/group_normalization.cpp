#include "layers/group_normalization.h"

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/config_reader.h"
#include "framework/ops/array.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "layers/conv_utils.h"

namespace ember::layers {

namespace {

Tensor gn_as_dtype(const Tensor& t, DType d) { return t.dtype() == d ? t : ops::cast(t, d); }

}  // namespace

GroupNormalization::GroupNormalization(GroupNormalizationOptions options)
    : Layer("group_normalization", {options.name, options.dtype, options.trainable}), options_(std::move(options)) {
  EMBER_CHECK(options_.groups > 0 || options_.groups == -1, InvalidArgument)
      << "GroupNormalization '" << name()
      << "': groups must be a positive integer (or -1 for instance normalization), got " << options_.groups;
}

int64_t GroupNormalization::channel_axis(const Shape& s) const {
  const int64_t a = options_.axis < 0 ? options_.axis + s.rank() : options_.axis;
  EMBER_CHECK(a >= 1 && a < s.rank(), InvalidArgument)
      << "GroupNormalization '" << name() << "': axis " << options_.axis
      << " is out of range (or the batch axis) for an input of shape " << s.to_keras_string();
  return a;
}

void GroupNormalization::build(const Shape& input_shape) {
  const int64_t a = channel_axis(input_shape);
  const int64_t dim = input_shape[a];
  EMBER_CHECK(dim > 0, InvalidArgument) << "GroupNormalization '" << name() << "': axis " << options_.axis
                                        << " must have a known size, got input shape " << input_shape.to_keras_string();
  if (options_.groups == -1) options_.groups = dim;
  EMBER_CHECK(dim >= options_.groups && dim % options_.groups == 0, InvalidArgument)
      << "GroupNormalization '" << name() << "': the channel count must be a multiple of groups (" << options_.groups
      << "), got " << dim << " channels on axis " << options_.axis << " of input shape "
      << input_shape.to_keras_string();
  if (options_.scale)
    gamma_ = add_weight("gamma", {dim}, options_.gamma_initializer, true, options_.gamma_regularizer);
  if (options_.center)
    beta_ = add_weight("beta", {dim}, options_.beta_initializer, true, options_.beta_regularizer);
}

void GroupNormalization::check_input_shape(const std::vector<Shape>& shapes) const {
  const Shape& built = build_input_shapes().at(0);
  bool ok = shapes.size() == 1 && shapes[0].rank() == built.rank();
  if (ok) {
    const int64_t a = channel_axis(built);
    ok = shapes[0][a] == built[a];
  }
  EMBER_CHECK(ok, InvalidArgument) << "GroupNormalization '" << name() << "': expected an input of rank "
                                   << built.rank() << " with " << built[channel_axis(built)] << " channels on axis "
                                   << options_.axis << " (the shape it was built for: " << built.to_keras_string()
                                   << "), got "
                                   << (shapes.size() == 1 ? "shape " + shapes[0].to_keras_string()
                                                          : std::to_string(shapes.size()) + " inputs");
}

Shape GroupNormalization::compute_output_shape(const Shape& input_shape) {
  channel_axis(input_shape);
  return input_shape;
}

// Keras 3: reshape the channel axis into (groups, channels / groups), moments over every axis but the batch
// and the group axis, x * inv + (beta - mean * inv) with inv = rsqrt(var + eps) * gamma, reshape back.
Tensor GroupNormalization::call(const Tensor& x, bool training) {
  const Shape& in = x.shape();
  const int64_t a = channel_axis(in);
  const int64_t g = options_.groups, c = in[a];
  Shape grouped, bshape;
  std::vector<int64_t> axes;
  for (int64_t i = 0; i < in.rank(); ++i) {
    if (i == a) {
      grouped.push_back(g);
      bshape.push_back(g);
    }
    grouped.push_back(i == a ? c / g : in[i]);
    bshape.push_back(i == a ? c / g : 1);
  }
  for (int64_t i = 1; i < grouped.rank(); ++i)
    if (i != a) axes.push_back(i);

  const DType dt = x.dtype() == DType::Float16 || x.dtype() == DType::BFloat16 ? DType::Float32 : x.dtype();
  const Tensor xs = gn_as_dtype(ops::reshape(x, grouped), dt);
  // ops.moments: the variance is the mean squared difference from the (constant) mean.
  Tensor mean = ops::reduce_mean(xs, axes, true);
  Tensor variance = ops::reduce_mean(ops::squared_difference(xs, ops::stop_gradient(mean)), axes, true);
  Tensor inv = ops::rsqrt(variance + options_.epsilon);
  if (gamma_.defined()) inv = inv * ops::reshape(gn_as_dtype(gamma_, dt), bshape);
  Tensor shift = -mean * inv;
  if (beta_.defined()) shift = shift + ops::reshape(gn_as_dtype(beta_, dt), bshape);
  return gn_as_dtype(ops::reshape(xs * inv + shift, in), compute_dtype());
}

nlohmann::json GroupNormalization::get_config() const {
  nlohmann::json c = base_config();
  c["groups"] = options_.groups;
  c["axis"] = options_.axis;
  c["epsilon"] = options_.epsilon;
  c["center"] = options_.center;
  c["scale"] = options_.scale;
  c["beta_initializer"] = options_.beta_initializer.to_json();
  c["gamma_initializer"] = options_.gamma_initializer.to_json();
  c["beta_regularizer"] = options_.beta_regularizer.to_json();
  c["gamma_regularizer"] = options_.gamma_regularizer.to_json();
  c["beta_constraint"] = nullptr;
  c["gamma_constraint"] = nullptr;
  return c;
}

LayerPtr GroupNormalization::from_config(const nlohmann::json& c) {
  using ::ember::detail::config_bool;
  using ::ember::detail::config_double;
  using ::ember::detail::config_int;
  LayerOptions base = options_from_config(c);
  const std::string who = "GroupNormalization '" + base.name + "'";
  for (const char* key : {"beta_constraint", "gamma_constraint"}) conv_utils::reject_unsupported(c, key, who);
  GroupNormalizationOptions o;
  o.groups = config_int(c, "groups", o.groups, who);
  o.axis = config_int(c, "axis", o.axis, who);
  o.epsilon = config_double(c, "epsilon", o.epsilon, who);
  o.center = config_bool(c, "center", o.center, who);
  o.scale = config_bool(c, "scale", o.scale, who);
  if (c.contains("beta_initializer")) o.beta_initializer = Initializer::from_json(c["beta_initializer"]);
  if (c.contains("gamma_initializer")) o.gamma_initializer = Initializer::from_json(c["gamma_initializer"]);
  if (c.contains("beta_regularizer")) o.beta_regularizer = Regularizer::from_json(c["beta_regularizer"]);
  if (c.contains("gamma_regularizer")) o.gamma_regularizer = Regularizer::from_json(c["gamma_regularizer"]);
  o.name = base.name;
  o.dtype = base.dtype;
  o.trainable = base.trainable;
  return std::make_shared<GroupNormalization>(o);
}

EMBER_REGISTER_LAYER(GroupNormalization);

}  // namespace ember::layers
