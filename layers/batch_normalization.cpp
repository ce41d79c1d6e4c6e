#include "layers/batch_normalization.h"

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/config_reader.h"
#include "framework/ops/array.h"
#include "framework/ops/batch_norm.h"
#include "framework/ops/creation.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"

namespace ember::layers {

using ::ember::detail::config_bool;
using ::ember::detail::config_double;

namespace {

// Statistics of half inputs are computed in float32 (Keras: backend.result_type(x.dtype, "float32")).
DType stats_dtype(DType d) { return d == DType::Float16 || d == DType::BFloat16 ? DType::Float32 : d; }

Tensor as_dtype(const Tensor& t, DType d) { return t.dtype() == d ? t : ops::cast(t, d); }

}  // namespace

BatchNormalization::BatchNormalization(BatchNormalizationOptions options)
    : Layer("batch_normalization", {options.name, options.dtype, options.trainable}), options_(std::move(options)) {
  EMBER_CHECK(options_.epsilon > 0, InvalidArgument)
      << "BatchNormalization '" << name() << "': epsilon must be positive, got " << options_.epsilon;
}

int64_t BatchNormalization::positive_axis(int64_t rank) const {
  const int64_t a = options_.axis;
  EMBER_CHECK(a >= -rank && a < rank, InvalidArgument)
      << "BatchNormalization '" << name() << "': axis " << a << " is out of range for an input of rank " << rank;
  return a < 0 ? a + rank : a;
}

void BatchNormalization::build(const Shape& input_shape) {
  const int64_t axis = positive_axis(input_shape.rank());
  const int64_t c = input_shape[axis];
  EMBER_CHECK(c > 0, InvalidArgument) << "BatchNormalization '" << name() << "': the size of axis " << options_.axis
                                      << " must be known, got input shape " << input_shape;
  if (options_.scale) gamma_ = add_weight("gamma", {c}, options_.gamma_initializer, true, options_.gamma_regularizer);
  if (options_.center) beta_ = add_weight("beta", {c}, options_.beta_initializer, true, options_.beta_regularizer);
  moving_mean_ = add_weight("moving_mean", {c}, options_.moving_mean_initializer, false);
  moving_variance_ = add_weight("moving_variance", {c}, options_.moving_variance_initializer, false);
}

void BatchNormalization::check_input_shape(const std::vector<Shape>& shapes) const {
  const Shape& built = build_input_shapes().at(0);
  const int64_t axis = options_.axis < 0 ? options_.axis + built.rank() : options_.axis;
  const Shape& s = shapes.at(0);
  EMBER_CHECK(shapes.size() == 1 && s.rank() == built.rank() && s[axis] == built[axis], InvalidArgument)
      << "BatchNormalization '" << name() << "': expected an input of rank " << built.rank() << " with " << built[axis]
      << " features on axis " << options_.axis << " (it was built for " << built << "), got " << s;
}

Tensor BatchNormalization::call(const Tensor& x, bool training) {
  const int64_t rank = x.rank(), axis = positive_axis(rank);
  const DType dt = stats_dtype(x.dtype());
  const bool train = training && trainable();
  if (train && ops::fused_batch_norm_applies(x.device().type(), x.dtype(), x.shape(), axis)) {
    // One op (cuDNN's NHWC batch norm) that reads a float16/bfloat16 x as it is, with the values of the ops below
    // (within float32 rounding) and the same moving statistics.
    const Shape c{x.shape()[axis]};
    const Tensor scale = options_.scale ? as_dtype(gamma_, dt) : ops::ones(c, dt);
    const Tensor offset = options_.center ? as_dtype(beta_, dt) : ops::zeros(c, dt);
    const std::vector<Tensor> r = ops::fused_batch_norm(x, scale, offset, options_.epsilon);
    update_moving_statistics(r[1], r[2]);
    return as_dtype(r[0], compute_dtype());
  }
  const Tensor xs = as_dtype(x, dt);
  // Per-feature vectors reshaped to broadcast against x: (1, ..., C, ..., 1).
  Shape bshape(std::vector<int64_t>(static_cast<size_t>(rank), 1));
  bshape[axis] = x.shape()[axis];
  auto feature = [&](const Tensor& v) { return ops::reshape(as_dtype(v, dt), bshape); };

  Tensor mean, variance;
  if (train) {
    std::vector<int64_t> axes;
    for (int64_t i = 0; i < rank; ++i)
      if (i != axis) axes.push_back(i);
    // tf.nn.moments: the variance's mean is cut from the tape (its gradient there is zero anyway).
    mean = ops::reduce_mean(xs, axes, true);
    variance = ops::reduce_mean(ops::squared_difference(xs, ops::stop_gradient(mean)), axes, true);
    const Shape c{bshape[axis]};
    update_moving_statistics(ops::reshape(mean, c), ops::reshape(variance, c));
  } else {
    mean = feature(moving_mean_.value());
    variance = feature(moving_variance_.value());
  }
  // tf.nn.batch_normalization's arithmetic: x * inv + (beta - mean * inv), inv = gamma / sqrt(var + eps).
  Tensor inv = ops::rsqrt(variance + options_.epsilon);
  if (options_.scale) inv = inv * feature(gamma_);
  Tensor shift = options_.center ? feature(beta_) - mean * inv : -(mean * inv);
  return as_dtype(xs * inv + shift, compute_dtype());
}

void BatchNormalization::update_moving_statistics(const Tensor& mean, const Tensor& variance) {
  NoRecordScope no_record;  // state updates are not part of the gradient
  const DType dt = mean.dtype();
  const double m = options_.momentum;
  Tensor mm = as_dtype(moving_mean_.value(), dt), mv = as_dtype(moving_variance_.value(), dt);
  moving_mean_.assign(as_dtype(mm * m + mean * (1.0 - m), moving_mean_.dtype()));
  moving_variance_.assign(as_dtype(mv * m + variance * (1.0 - m), moving_variance_.dtype()));
}

Shape BatchNormalization::compute_output_shape(const Shape& input_shape) {
  positive_axis(input_shape.rank());
  return input_shape;
}

nlohmann::json BatchNormalization::get_config() const {
  nlohmann::json c = base_config();
  c["axis"] = options_.axis;
  c["momentum"] = options_.momentum;
  c["epsilon"] = options_.epsilon;
  c["center"] = options_.center;
  c["scale"] = options_.scale;
  c["beta_initializer"] = options_.beta_initializer.to_json();
  c["gamma_initializer"] = options_.gamma_initializer.to_json();
  c["moving_mean_initializer"] = options_.moving_mean_initializer.to_json();
  c["moving_variance_initializer"] = options_.moving_variance_initializer.to_json();
  c["beta_regularizer"] = options_.beta_regularizer.to_json();
  c["gamma_regularizer"] = options_.gamma_regularizer.to_json();
  c["beta_constraint"] = nullptr;
  c["gamma_constraint"] = nullptr;
  c["synchronized"] = options_.synchronized;
  c["renorm"] = false;
  c["renorm_clipping"] = nullptr;
  c["renorm_momentum"] = 0.99;
  return c;
}

LayerPtr BatchNormalization::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const std::string who = "BatchNormalization '" + base.name + "'";
  BatchNormalizationOptions o;
  if (c.contains("axis")) {
    // tf-keras may write the axis as a one-element list.
    const nlohmann::json& a = c["axis"];
    EMBER_CHECK(a.is_number_integer() || (a.is_array() && a.size() == 1 && a[0].is_number_integer()), InvalidArgument)
        << "BatchNormalization '" << base.name << "': axis must be an integer (or a one-element list), got " << a.dump();
    o.axis = a.is_array() ? a[0].get<int64_t>() : a.get<int64_t>();
  }
  o.momentum = config_double(c, "momentum", 0.99, who);
  o.epsilon = config_double(c, "epsilon", 1e-3, who);
  o.center = config_bool(c, "center", true, who);
  o.scale = config_bool(c, "scale", true, who);
  if (c.contains("beta_initializer")) o.beta_initializer = Initializer::from_json(c["beta_initializer"]);
  if (c.contains("gamma_initializer")) o.gamma_initializer = Initializer::from_json(c["gamma_initializer"]);
  if (c.contains("moving_mean_initializer"))
    o.moving_mean_initializer = Initializer::from_json(c["moving_mean_initializer"]);
  if (c.contains("moving_variance_initializer"))
    o.moving_variance_initializer = Initializer::from_json(c["moving_variance_initializer"]);
  if (c.contains("beta_regularizer")) o.beta_regularizer = Regularizer::from_json(c["beta_regularizer"]);
  if (c.contains("gamma_regularizer")) o.gamma_regularizer = Regularizer::from_json(c["gamma_regularizer"]);
  o.synchronized = config_bool(c, "synchronized", false, who);
  EMBER_CHECK(!config_bool(c, "renorm", false, who), InvalidArgument)
      << "BatchNormalization '" << base.name << "': renorm = true (batch renormalization) is not supported";
  o.name = base.name;
  o.dtype = base.dtype;
  o.trainable = base.trainable;
  return std::make_shared<BatchNormalization>(o);
}

EMBER_REGISTER_LAYER(BatchNormalization);

}  // namespace ember::layers
