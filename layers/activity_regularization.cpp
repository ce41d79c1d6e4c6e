#include "layers/activity_regularization.h"

#include <cmath>

#include "framework/core/config_reader.h"
#include "framework/ops/creation.h"
#include "framework/ops/elementwise.h"

namespace ember::layers {

ActivityRegularization::ActivityRegularization(ActivityRegularizationOptions options)
    : Layer("activity_regularization", {options.name, options.dtype, options.trainable}),
      options_(std::move(options)) {
  supports_masking_ = true;  // passes its input's mask on (Keras)
  for (auto [key, v] : {std::pair{"l1", options_.l1}, std::pair{"l2", options_.l2}})
    EMBER_CHECK(std::isfinite(v) && v >= 0, InvalidArgument)
        << "ActivityRegularization '" << name() << "': " << key << " must be a finite number >= 0, got " << v;
  regularizer_ = regularizers::L1L2(options_.l1, options_.l2);
}

Tensor ActivityRegularization::call(const Tensor& x, bool training) {
  // Keras's Layer.__call__: the regularizer of the output, divided by the batch size (divide_no_nan, so an
  // empty batch adds 0), for outputs of rank > 0.
  Tensor loss = regularizer_(x);
  if (x.rank() > 0) {
    loss = ops::div_no_nan(loss, ops::full({}, static_cast<double>(x.shape()[0]), loss.dtype()));
  }
  add_loss(loss);
  return x;
}

nlohmann::json ActivityRegularization::get_config() const {
  nlohmann::json c = base_config();
  c["l1"] = options_.l1;
  c["l2"] = options_.l2;
  return c;
}

LayerPtr ActivityRegularization::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const std::string who = "ActivityRegularization '" + base.name + "'";
  ActivityRegularizationOptions o;
  o.l1 = ::ember::detail::config_double(c, "l1", 0.0, who);  // null: 0, as Keras's L1L2
  o.l2 = ::ember::detail::config_double(c, "l2", 0.0, who);
  o.name = base.name;
  o.dtype = base.dtype;
  o.trainable = base.trainable;
  return std::make_shared<ActivityRegularization>(o);
}

EMBER_REGISTER_LAYER(ActivityRegularization);

}  // namespace ember::layers
