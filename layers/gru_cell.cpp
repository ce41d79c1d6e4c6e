#include "layers/gru_cell.h"

#include "framework/model/activations.h"
#include "framework/ops/array.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/linalg.h"
#include "framework/ops/recurrent.h"

namespace ember::layers {

GRUCell::GRUCell(int64_t units, GRUCellOptions options)
    : RNNCell("gru_cell", {options.name, options.dtype, options.trainable}), units_(units), options_(std::move(options)) {
  EMBER_CHECK(units > 0, InvalidArgument) << who() << ": units must be positive, got " << units;
  activations::get(options_.activation);
  activations::get(options_.recurrent_activation);
  set_dropout(options_.dropout, options_.recurrent_dropout, options_.seed);
}

void GRUCell::build(const Shape& input_shape) {
  const int64_t in = input_shape[input_shape.rank() - 1];
  kernel_ = add_weight("kernel", {in, 3 * units_}, options_.kernel_initializer, true, options_.kernel_regularizer);
  recurrent_kernel_ = add_weight("recurrent_kernel", {units_, 3 * units_}, options_.recurrent_initializer, true,
                                 options_.recurrent_regularizer);
  if (options_.use_bias) {
    const Shape shape = options_.reset_after ? Shape{2, 3 * units_} : Shape{3 * units_};
    bias_ = add_weight("bias", shape, options_.bias_initializer, true, options_.bias_regularizer);
  }
}

std::vector<Tensor> GRUCell::step(const Tensor& input, const std::vector<Tensor>& states, bool training) {
  const Tensor& h_prev = states.at(0);
  const int64_t u = units_;
  const bool after = options_.reset_after;
  const auto act = activations::get(options_.activation);
  const auto gate = activations::get(options_.recurrent_activation);
  const Tensor kernel = read(kernel_), recurrent = read(recurrent_kernel_);
  // reset_after: row 0 of the bias is the input bias, row 1 the recurrent one.
  Tensor input_bias, recurrent_bias;
  if (options_.use_bias) {
    if (after) {
      std::vector<Tensor> rows = ops::split(read(bias_), 2, 0);
      input_bias = ops::reshape(rows[0], {3 * u});
      recurrent_bias = ops::reshape(rows[1], {3 * u});
    } else {
      input_bias = read(bias_);
    }
  }
  Tensor z, r, hh;
  if (training && recurrent_dropout() > 0) {
    // Keras's implementation 1: each gate sees its own masks of the input and of h.
    std::vector<Tensor> k = ops::split(kernel, 3, 1), rk = ops::split(recurrent, 3, 1);
    std::vector<Tensor> ib = input_bias.defined() ? ops::split(input_bias, 3, 0) : std::vector<Tensor>{};
    std::vector<Tensor> rb = recurrent_bias.defined() ? ops::split(recurrent_bias, 3, 0) : std::vector<Tensor>{};
    const std::vector<Tensor>* in_masks = dropout() > 0 ? &dropout_masks(input, 3, false) : nullptr;
    const std::vector<Tensor>& rec_masks = dropout_masks(h_prev, 3, true);
    Tensor x[3], hm[3];
    for (int g = 0; g < 3; ++g) {
      Tensor xin = in_masks ? input * (*in_masks)[g] : input;
      x[g] = ib.empty() ? ops::matmul(xin, k[g]) : ops::matmul_bias(xin, k[g], ib[g]);
      hm[g] = h_prev * rec_masks[g];
    }
    Tensor rec_z = ops::matmul(hm[0], rk[0]), rec_r = ops::matmul(hm[1], rk[1]);
    if (!rb.empty()) rec_z = rec_z + rb[0], rec_r = rec_r + rb[1];
    z = gate(x[0] + rec_z);
    r = gate(x[1] + rec_r);
    if (after) {
      Tensor rec_h = ops::matmul(hm[2], rk[2]);
      if (!rb.empty()) rec_h = rec_h + rb[2];
      hh = act(x[2] + r * rec_h);
    } else {
      hh = act(x[2] + ops::matmul(r * hm[2], rk[2]));
    }
  } else {
    Tensor x = training && dropout() > 0 ? input * dropout_masks(input, 1, false)[0] : input;
    Tensor matrix_x = input_bias.defined() ? ops::matmul_bias(x, kernel, input_bias) : ops::matmul(x, kernel);
    std::vector<Tensor> xs = ops::split(matrix_x, 3, 1);
    if (after) {
      Tensor inner = ops::matmul(h_prev, recurrent);
      if (recurrent_bias.defined()) inner = inner + recurrent_bias;
      std::vector<Tensor> rs = ops::split(inner, 3, 1);
      z = gate(xs[0] + rs[0]);
      r = gate(xs[1] + rs[1]);
      hh = act(xs[2] + r * rs[2]);
    } else {
      std::vector<Tensor> rk = ops::split(recurrent, std::vector<int64_t>{2 * u, u}, 1);
      std::vector<Tensor> rs = ops::split(ops::matmul(h_prev, rk[0]), 2, 1);
      z = gate(xs[0] + rs[0]);
      r = gate(xs[1] + rs[1]);
      hh = act(xs[2] + ops::matmul(r * h_prev, rk[1]));
    }
  }
  Tensor h = z * h_prev + (1.0 - z) * hh;
  return {h, h};
}

bool GRUCell::has_fused_sequence(const Tensor& sequence) const {
  return detail::rnn_fusable_options(options_) && (options_.reset_after || sequence.device().type() == DeviceType::CPU);
}

std::vector<Tensor> GRUCell::run_sequence(const Tensor& sequence, const std::vector<Tensor>& states, bool training,
                                          const Tensor& sequence_lengths) {
  const Tensor x = sequence_with_dropout(sequence, training);
  const bool after = options_.reset_after;
  return detail::rnn_run_widened(
      compute_dtype(), {x, states.at(0), read(kernel_), read(recurrent_kernel_), read(bias_)},
      [after, &sequence_lengths](const std::vector<Tensor>& in) {
        std::vector<Tensor> r = ops::gru_sequence(in[0], in[1], in[2], in[3], in[4], after, sequence_lengths);
        r.pop_back();  // the backward's saved state
        return r;
      });
}

nlohmann::json GRUCell::get_config() const {
  nlohmann::json c = base_config();
  c["units"] = units_;
  detail::rnn_write_cell_keys(c, options_);
  c["reset_after"] = options_.reset_after;
  c["seed"] = options_.seed ? nlohmann::json(*options_.seed) : nlohmann::json(nullptr);
  return c;
}

GRUCellOptions GRUCell::cell_options_from_config(const nlohmann::json& c, const std::string& who) {
  GRUCellOptions o;
  detail::rnn_read_cell_keys(c, o, who);
  o.reset_after = ::ember::detail::config_bool(c, "reset_after", true, who);
  return o;
}

LayerPtr GRUCell::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const std::string who = "GRUCell '" + base.name + "'";
  GRUCellOptions o = cell_options_from_config(c, who);
  o.dtype = base.dtype;
  o.trainable = base.trainable;
  return std::make_shared<GRUCell>(::ember::detail::config_required_int(c, "units", who), o);
}

EMBER_REGISTER_LAYER(GRUCell);

}  // namespace ember::layers
