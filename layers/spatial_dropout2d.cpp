#include "layers/spatial_dropout2d.h"

#include "framework/core/config_reader.h"
#include "framework/ops/creation.h"
#include "framework/ops/elementwise.h"
#include "layers/conv_utils.h"

namespace ember::layers {

SpatialDropout2D::SpatialDropout2D(double rate, SpatialDropout2DOptions options)
    : Layer("spatial_dropout2d", {options.name, options.dtype, options.trainable}),
      rate_(rate),
      options_(std::move(options)),
      noise_(options_.seed) {
  EMBER_CHECK(rate >= 0 && rate < 1, InvalidArgument)
      << "SpatialDropout2D '" << name() << "': rate must be in [0, 1), got " << rate;
  options_.data_format = conv_utils::standardize_data_format(options_.data_format, conv_utils::who(*this));
}

Shape SpatialDropout2D::compute_output_shape(const Shape& input_shape) {
  check_input_shape({input_shape});
  return input_shape;
}

void SpatialDropout2D::check_input_shape(const std::vector<Shape>& shapes) const {
  EMBER_CHECK(shapes.size() == 1 && shapes[0].rank() == 4, InvalidArgument)
      << "SpatialDropout2D '" << name() << "': expected one rank-4 input (batch, height, width, channels), got "
      << (shapes.size() == 1 ? "shape " + shapes[0].to_keras_string() : std::to_string(shapes.size()) + " inputs");
}

// Keras: Dropout's rule (keep = u >= rate, kept values scaled by 1 / (1 - rate)) on a (batch, 1, 1, channels)
// mask broadcast over the positions.
Tensor SpatialDropout2D::call(const Tensor& x, bool training) {
  check_input_shape({x.shape()});
  if (!training || rate_ == 0) return x;
  const Shape mask_shape{x.shape()[0], 1, 1, x.shape()[3]};
  Tensor keep = ops::greater_equal(noise_.uniform(mask_shape, DType::Float32), ops::full({}, rate_, DType::Float32));
  return x * (ops::cast(keep, x.dtype()) * (1.0 / (1.0 - rate_)));
}

nlohmann::json SpatialDropout2D::get_config() const {
  nlohmann::json c = base_config();
  c.erase("trainable");
  c["dtype"] = dtype_policy().name();
  c["rate"] = rate_;
  c["seed"] = seed_to_config(options_.seed);
  c["data_format"] = options_.data_format;
  return c;
}

LayerPtr SpatialDropout2D::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const std::string who = "SpatialDropout2D '" + base.name + "'";
  SpatialDropout2DOptions o;
  o.data_format = conv_utils::data_format_from_config(c);
  o.seed = seed_from_config(c, who);
  o.name = base.name;
  o.dtype = base.dtype;
  o.trainable = base.trainable;
  return std::make_shared<SpatialDropout2D>(::ember::detail::config_required_double(c, "rate", who), o);
}

EMBER_REGISTER_LAYER(SpatialDropout2D);

}  // namespace ember::layers
