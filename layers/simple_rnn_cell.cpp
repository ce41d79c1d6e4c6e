#include "layers/simple_rnn_cell.h"

#include "framework/model/activations.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/linalg.h"

namespace ember::layers {

SimpleRNNCell::SimpleRNNCell(int64_t units, SimpleRNNCellOptions options)
    : RNNCell("simple_rnn_cell", {options.name, options.dtype, options.trainable}),
      units_(units),
      options_(std::move(options)) {
  EMBER_CHECK(units > 0, InvalidArgument) << who() << ": units must be positive, got " << units;
  activations::get(options_.activation);  // an unknown name fails here, not at the first call
  set_dropout(options_.dropout, options_.recurrent_dropout, options_.seed);
}

void SimpleRNNCell::build(const Shape& input_shape) {
  const int64_t in = input_shape[input_shape.rank() - 1];
  kernel_ = add_weight("kernel", {in, units_}, options_.kernel_initializer, true, options_.kernel_regularizer);
  recurrent_kernel_ = add_weight("recurrent_kernel", {units_, units_}, options_.recurrent_initializer, true,
                                 options_.recurrent_regularizer);
  if (options_.use_bias) bias_ = add_weight("bias", {units_}, options_.bias_initializer, true, options_.bias_regularizer);
}

std::vector<Tensor> SimpleRNNCell::step(const Tensor& input, const std::vector<Tensor>& states, bool training) {
  Tensor x = input, prev = states.at(0);
  if (training && dropout() > 0) x = x * dropout_masks(x, 1, false)[0];
  if (training && recurrent_dropout() > 0) prev = prev * dropout_masks(prev, 1, true)[0];
  Tensor h = options_.use_bias ? ops::matmul_bias(x, read(kernel_), read(bias_)) : ops::matmul(x, read(kernel_));
  Tensor out = activations::get(options_.activation)(h + ops::matmul(prev, read(recurrent_kernel_)));
  return {out, out};
}

nlohmann::json SimpleRNNCell::get_config() const {
  nlohmann::json c = base_config();
  c["units"] = units_;
  detail::rnn_write_cell_keys(c, options_);
  c["seed"] = options_.seed ? nlohmann::json(*options_.seed) : nlohmann::json(nullptr);
  return c;
}

SimpleRNNCellOptions SimpleRNNCell::cell_options_from_config(const nlohmann::json& c, const std::string& who) {
  SimpleRNNCellOptions o;
  detail::rnn_read_cell_keys(c, o, who);
  return o;
}

LayerPtr SimpleRNNCell::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const std::string who = "SimpleRNNCell '" + base.name + "'";
  SimpleRNNCellOptions o = cell_options_from_config(c, who);
  o.dtype = base.dtype;
  o.trainable = base.trainable;
  return std::make_shared<SimpleRNNCell>(::ember::detail::config_required_int(c, "units", who), o);
}

EMBER_REGISTER_LAYER(SimpleRNNCell);

}  // namespace ember::layers
