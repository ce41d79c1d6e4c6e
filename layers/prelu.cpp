#include "layers/prelu.h"

#include <algorithm>

#include "framework/core/config_reader.h"
#include "framework/ops/elementwise.h"
#include "layers/conv_utils.h"

namespace ember::layers {

namespace {

bool prelu_is_shared(const std::vector<int64_t>& shared_axes, int64_t axis) {
  return std::find(shared_axes.begin(), shared_axes.end(), axis) != shared_axes.end();
}

}  // namespace

PReLU::PReLU(PReLUOptions options)
    : Layer("p_re_lu", {options.name, options.dtype, options.trainable}), options_(std::move(options)) {
  supports_masking_ = true;  // passes its input's mask on (Keras)
  for (int64_t a : options_.shared_axes)
    EMBER_CHECK(a >= 1, InvalidArgument) << "PReLU '" << name()
                                         << "': shared_axes count the batch axis as 0, so each must be >= 1, got "
                                         << a;
}

void PReLU::build(const Shape& input_shape) {
  EMBER_CHECK(input_shape.rank() >= 2, InvalidArgument)
      << "PReLU '" << name() << "': expected an input of rank >= 2 (batch first), got shape " << input_shape;
  Shape param(input_shape.begin() + 1, input_shape.end());
  for (int64_t a : options_.shared_axes) {
    EMBER_CHECK(a < input_shape.rank(), InvalidArgument)
        << "PReLU '" << name() << "': shared axis " << a << " does not exist in an input of shape " << input_shape;
    param[a - 1] = 1;
  }
  for (int64_t i = 0; i < param.rank(); ++i)
    EMBER_CHECK(param[i] > 0, InvalidArgument)
        << "PReLU '" << name() << "': axis " << i + 1 << " must have a known size unless it is shared, got input shape "
        << input_shape;
  alpha_ = add_weight("alpha", param, options_.alpha_initializer, true, options_.alpha_regularizer);
}

void PReLU::check_input_shape(const std::vector<Shape>& shapes) const {
  const Shape& built = build_input_shapes().at(0);
  bool ok = shapes.size() == 1 && shapes[0].rank() == built.rank();
  for (int64_t i = 1; ok && i < built.rank(); ++i)
    ok = prelu_is_shared(options_.shared_axes, i) || shapes[0][i] == built[i];
  EMBER_CHECK(ok, InvalidArgument) << "PReLU '" << name() << "': expected an input like " << built.to_keras_string()
                                   << " (the shape it was built for; shared axes may differ), got "
                                   << (shapes.size() == 1 ? shapes[0].to_keras_string()
                                                          : std::to_string(shapes.size()) + " inputs");
}

// Keras: relu(x) - alpha * relu(-x).
Tensor PReLU::call(const Tensor& x, bool training) { return ops::relu(x) - read(alpha_) * ops::relu(-x); }

nlohmann::json PReLU::get_config() const {
  nlohmann::json c = base_config();
  c["alpha_initializer"] = options_.alpha_initializer.to_json();
  c["alpha_regularizer"] = options_.alpha_regularizer.to_json();
  c["alpha_constraint"] = nullptr;
  c["shared_axes"] = options_.shared_axes.empty() ? nlohmann::json(nullptr) : nlohmann::json(options_.shared_axes);
  return c;
}

LayerPtr PReLU::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const std::string who = "PReLU '" + base.name + "'";
  conv_utils::reject_unsupported(c, "alpha_constraint", who);
  PReLUOptions o;
  if (c.contains("alpha_initializer")) o.alpha_initializer = Initializer::from_json(c["alpha_initializer"]);
  if (c.contains("alpha_regularizer")) o.alpha_regularizer = Regularizer::from_json(c["alpha_regularizer"]);
  o.shared_axes = ::ember::detail::config_int_list(c, "shared_axes", {}, who);
  o.name = base.name;
  o.dtype = base.dtype;
  o.trainable = base.trainable;
  return std::make_shared<PReLU>(o);
}

EMBER_REGISTER_LAYER(PReLU);

}  // namespace ember::layers
