#include "layers/time_distributed.h"

#include "framework/model/keras_object.h"
#include "framework/ops/array.h"

namespace ember::layers {

TimeDistributed::TimeDistributed(LayerPtr layer, LayerOptions options)
    : Layer("time_distributed", options), layer_(std::move(layer)) {
  supports_masking_ = true;
  EMBER_CHECK(layer_ != nullptr, InvalidArgument) << "TimeDistributed '" << name() << "': the layer must not be null";
  // Keras's variable paths: "time_distributed/dense/kernel".
  layer_->set_weight_name_scope(name());
  track(layer_);
}

Shape TimeDistributed::child_shape(const Shape& s) const {
  EMBER_CHECK(s.rank() >= 3, InvalidArgument)
      << "TimeDistributed '" << name() << "': expected an input of at least 3 dimensions (batch, timesteps, ...), got "
      << s.to_keras_string();
  Shape child{s[0]};
  for (int64_t d = 2; d < s.rank(); ++d) child.push_back(s[d]);
  return child;
}

void TimeDistributed::build(const Shape& input_shape) {
  const Shape child = child_shape(input_shape);
  if (!layer_->built()) layer_->build_for({child});
}

void TimeDistributed::check_input_shape(const std::vector<Shape>& shapes) const {
  EMBER_CHECK(shapes.size() == 1, InvalidArgument)
      << "TimeDistributed '" << name() << "': expected one input, got " << shapes.size();
  layer_->check_input_shape({child_shape(shapes[0])});
}

Tensor TimeDistributed::call(const Tensor& x, bool training) { return run(x, Tensor(), training); }

std::vector<Tensor> TimeDistributed::call_masked(const std::vector<Tensor>& xs, const std::vector<Tensor>& masks,
                                                 bool training) {
  EMBER_CHECK(xs.size() == 1, InvalidArgument)
      << "TimeDistributed '" << name() << "': expected one input, got " << xs.size();
  return {run(xs[0], masks.at(0), training)};
}

Tensor TimeDistributed::run(const Tensor& x, const Tensor& mask, bool training) {
  const Shape child = child_shape(x.shape());
  const int64_t steps = x.shape()[1];
  EMBER_CHECK(steps > 0, InvalidArgument) << "TimeDistributed '" << name()
                                          << "': expected at least one time step, got an input of shape "
                                          << x.shape().to_keras_string();
  std::vector<Tensor> step_masks;
  if (mask.defined()) {
    EMBER_CHECK(mask.rank() >= 2 && mask.shape()[0] == x.shape()[0] && mask.shape()[1] == steps, InvalidArgument)
        << "TimeDistributed '" << name() << "': the mask's first two dimensions must be the input's (batch, timesteps) "
        << "= (" << x.shape()[0] << ", " << steps << "), got a mask of shape " << mask.shape().to_keras_string();
    Shape step_mask_shape{mask.shape()[0]};
    for (int64_t d = 2; d < mask.rank(); ++d) step_mask_shape.push_back(mask.shape()[d]);
    for (const Tensor& m : ops::split(mask, steps, 1)) step_masks.push_back(ops::reshape(m, step_mask_shape));
  }
  // Keras: the layer runs on each step in turn (its call sees one step's batch), and the results are stacked.
  std::vector<Tensor> parts = steps == 1 ? std::vector<Tensor>{x} : ops::split(x, steps, 1);
  std::vector<Tensor> outputs;
  outputs.reserve(parts.size());
  for (int64_t t = 0; t < steps; ++t) {
    Tensor xt = ops::reshape(parts[static_cast<size_t>(t)], child);
    if (mask.defined()) backend::set_keras_mask(xt, step_masks[static_cast<size_t>(t)]);
    outputs.push_back((*layer_)(xt, training));
  }
  return ops::stack(outputs, 1);
}

Shape TimeDistributed::compute_output_shape(const Shape& input_shape) {
  const Shape child_out = layer_->compute_output_shape(child_shape(input_shape));
  Shape out{child_out[0], input_shape[1]};
  for (int64_t d = 1; d < child_out.rank(); ++d) out.push_back(child_out[d]);
  return out;
}

nlohmann::json TimeDistributed::get_config() const {
  nlohmann::json c = base_config();
  // Keras 3's serialized layer, without its build_config: an unbuilt twin gives the same config.
  c["layer"] = serialize_keras_object(*layer_);
  c["layer"].erase("build_config");
  return c;
}

LayerPtr TimeDistributed::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  EMBER_CHECK(c.contains("layer") && c["layer"].is_object(), InvalidArgument)
      << "TimeDistributed '" << base.name << "': config \"layer\" is required (a serialized layer such as "
      << "{\"class_name\": \"Dense\", ...})";
  return std::make_shared<TimeDistributed>(deserialize_layer(c["layer"]), base);
}

EMBER_REGISTER_LAYER(TimeDistributed);

}  // namespace ember::layers
