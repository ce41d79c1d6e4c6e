#include "layers/lstm_cell.h"

#include "framework/model/activations.h"
#include "framework/ops/array.h"
#include "framework/ops/creation.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/linalg.h"
#include "framework/ops/recurrent.h"

namespace ember::layers {

namespace {

// Keras's unit_forget_bias initializer: [bias_initializer(units), ones(units), bias_initializer(2 * units)].
class LstmForgetBiasInit : public initializers::InitializerImpl {
 public:
  explicit LstmForgetBiasInit(Initializer base) : base_(std::move(base)) {}
  Tensor operator()(const Shape& shape, DType dtype) const override {
    const int64_t units = shape[0] / 4;
    return ops::concat({base_({units}, dtype), ops::ones({units}, dtype), base_({2 * units}, dtype)}, 0);
  }
  std::string class_name() const override { return base_.class_name(); }
  nlohmann::json get_config() const override { return base_.get_config(); }

 private:
  Initializer base_;
};

}  // namespace

LSTMCell::LSTMCell(int64_t units, LSTMCellOptions options)
    : RNNCell("lstm_cell", {options.name, options.dtype, options.trainable}), units_(units), options_(std::move(options)) {
  EMBER_CHECK(units > 0, InvalidArgument) << who() << ": units must be positive, got " << units;
  activations::get(options_.activation);
  activations::get(options_.recurrent_activation);
  set_dropout(options_.dropout, options_.recurrent_dropout, options_.seed);
}

void LSTMCell::build(const Shape& input_shape) {
  const int64_t in = input_shape[input_shape.rank() - 1];
  kernel_ = add_weight("kernel", {in, 4 * units_}, options_.kernel_initializer, true, options_.kernel_regularizer);
  recurrent_kernel_ = add_weight("recurrent_kernel", {units_, 4 * units_}, options_.recurrent_initializer, true,
                                 options_.recurrent_regularizer);
  if (options_.use_bias) {
    Initializer init = options_.unit_forget_bias ? Initializer(LstmForgetBiasInit(options_.bias_initializer))
                                                 : options_.bias_initializer;
    bias_ = add_weight("bias", {4 * units_}, init, true, options_.bias_regularizer);
  }
}

std::vector<Tensor> LSTMCell::step(const Tensor& input, const std::vector<Tensor>& states, bool training) {
  const Tensor &h_prev = states.at(0), &c_prev = states.at(1);
  const auto act = activations::get(options_.activation);
  const auto gate = activations::get(options_.recurrent_activation);
  Tensor z_i, z_f, z_c, z_o;
  if (training && recurrent_dropout() > 0) {
    // Keras's implementation 1: each gate sees its own masks of the input and of h.
    std::vector<Tensor> k = ops::split(read(kernel_), 4, 1), r = ops::split(read(recurrent_kernel_), 4, 1);
    std::vector<Tensor> b = options_.use_bias ? ops::split(read(bias_), 4, 0) : std::vector<Tensor>{};
    const std::vector<Tensor>* in_masks = dropout() > 0 ? &dropout_masks(input, 4, false) : nullptr;
    const std::vector<Tensor>& rec_masks = dropout_masks(h_prev, 4, true);
    Tensor z[4];
    for (int g = 0; g < 4; ++g) {
      Tensor x = in_masks ? input * (*in_masks)[g] : input;
      Tensor xg = options_.use_bias ? ops::matmul_bias(x, k[g], b[g]) : ops::matmul(x, k[g]);
      z[g] = xg + ops::matmul(h_prev * rec_masks[g], r[g]);
    }
    z_i = z[0], z_f = z[1], z_c = z[2], z_o = z[3];
  } else {
    Tensor x = training && dropout() > 0 ? input * dropout_masks(input, 1, false)[0] : input;
    Tensor z = ops::matmul(x, read(kernel_)) + ops::matmul(h_prev, read(recurrent_kernel_));
    if (options_.use_bias) z = z + read(bias_);
    std::vector<Tensor> parts = ops::split(z, 4, 1);
    z_i = parts[0], z_f = parts[1], z_c = parts[2], z_o = parts[3];
  }
  Tensor c = gate(z_f) * c_prev + gate(z_i) * act(z_c);
  Tensor h = gate(z_o) * act(c);
  return {h, h, c};
}

bool LSTMCell::has_fused_sequence(const Tensor& /*sequence*/) const { return detail::rnn_fusable_options(options_); }

std::vector<Tensor> LSTMCell::run_sequence(const Tensor& sequence, const std::vector<Tensor>& states, bool training,
                                           const Tensor& sequence_lengths) {
  const Tensor x = sequence_with_dropout(sequence, training);
  return detail::rnn_run_widened(
      compute_dtype(), {x, states.at(0), states.at(1), read(kernel_), read(recurrent_kernel_), read(bias_)},
      [&sequence_lengths](const std::vector<Tensor>& in) {
        std::vector<Tensor> r = ops::lstm_sequence(in[0], in[1], in[2], in[3], in[4], in[5], sequence_lengths);
        r.pop_back();  // the backward's saved state
        return r;
      });
}

nlohmann::json LSTMCell::get_config() const {
  nlohmann::json c = base_config();
  c["units"] = units_;
  detail::rnn_write_cell_keys(c, options_);
  c["unit_forget_bias"] = options_.unit_forget_bias;
  c["seed"] = options_.seed ? nlohmann::json(*options_.seed) : nlohmann::json(nullptr);
  return c;
}

LSTMCellOptions LSTMCell::cell_options_from_config(const nlohmann::json& c, const std::string& who) {
  LSTMCellOptions o;
  detail::rnn_read_cell_keys(c, o, who);
  o.unit_forget_bias = ::ember::detail::config_bool(c, "unit_forget_bias", true, who);
  return o;
}

LayerPtr LSTMCell::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const std::string who = "LSTMCell '" + base.name + "'";
  LSTMCellOptions o = cell_options_from_config(c, who);
  o.dtype = base.dtype;
  o.trainable = base.trainable;
  return std::make_shared<LSTMCell>(::ember::detail::config_required_int(c, "units", who), o);
}

EMBER_REGISTER_LAYER(LSTMCell);

}  // namespace ember::layers
