#include "layers/rnn.h"

#include "framework/autodiff/gradient_tape.h"
#include "framework/graph/control_flow.h"
#include "framework/graph/trace.h"
#include "framework/model/keras_object.h"
#include "framework/ops/array.h"
#include "framework/ops/creation.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"

namespace ember::layers {

using ::ember::detail::config_bool;

namespace {

std::shared_ptr<RNNCell> rnn_checked_cell(std::shared_ptr<RNNCell> cell) {
  EMBER_CHECK(cell != nullptr, InvalidArgument) << "RNN: the cell must not be null";
  return cell;
}

}  // namespace

RNN::RNN(RNNCell&& cell, RNNOptions options)
    : RNN(std::dynamic_pointer_cast<RNNCell>(std::move(cell).move_to_shared()), std::move(options)) {}

RNN::RNN(std::shared_ptr<RNNCell> cell, RNNOptions options) : RNN("rnn", std::move(cell), std::move(options)) {}

RNN::RNN(const std::string& base_name, std::shared_ptr<RNNCell> cell, RNNOptions options)
    : Layer(base_name, {options.name, options.dtype, options.trainable}),
      cell_(rnn_checked_cell(std::move(cell))),
      options_(std::move(options)) {
  supports_masking_ = true;
  // Keras names the cell's weights inside the layer's scope: "lstm/lstm_cell/kernel".
  cell_->set_weight_name_scope(name());
  track(cell_);
}

void RNN::build(const std::vector<Shape>& shapes) {
  const Shape& seq = shapes.at(0);
  EMBER_CHECK(seq.rank() == 3 && seq[2] > 0, InvalidArgument)
      << who() << ": expected an input of shape (batch, timesteps, features), got " << seq.to_keras_string();
  const size_t n_states = cell_->state_size().size();
  EMBER_CHECK(shapes.size() == 1 || shapes.size() == 1 + n_states, InvalidArgument)
      << who() << ": expected the sequences alone or followed by " << n_states << " initial states, got "
      << shapes.size() << " inputs";
  if (!cell_->built()) cell_->build_for({Shape{-1, seq[2]}});
}

void RNN::check_input_shape(const std::vector<Shape>& shapes) const {
  // Any number of time steps (Keras's InputSpec(ndim=3)); the features the cell was built for.
  const Shape& seq = shapes.at(0);
  const int64_t features = build_input_shapes().at(0)[2];
  EMBER_CHECK(seq.rank() == 3 && seq[2] == features, InvalidArgument)
      << who() << ": expected an input of shape (batch, timesteps, " << features << "), got " << seq.to_keras_string();
}

std::vector<Tensor> RNN::initial_states(const std::vector<Tensor>& xs) {
  const int64_t batch = xs[0].shape()[0];
  const std::vector<int64_t> sizes = cell_->state_size();
  if (xs.size() > 1) {
    EMBER_CHECK(xs.size() == 1 + sizes.size(), InvalidArgument)
        << who() << ": expected " << sizes.size() << " initial states after the sequences, got " << xs.size() - 1;
    std::vector<Tensor> states(xs.begin() + 1, xs.end());
    for (size_t i = 0; i < states.size(); ++i) {
      const Shape want{batch, sizes[i]};
      EMBER_CHECK(states[i].shape() == want, InvalidArgument)
          << who() << ": expected initial state " << i << " of shape " << want.to_keras_string() << ", got "
          << states[i].shape().to_keras_string();
      if (states[i].dtype() != cell_->compute_dtype()) states[i] = ops::cast(states[i], cell_->compute_dtype());
    }
    return states;
  }
  if (!options_.stateful) return cell_->get_initial_state(batch);
  if (states_.empty()) {
    // Created outside any trace or tape, as a layer's weights are.
    graph::SuspendTracing untraced;
    NoRecordScope no_record;
    for (const Tensor& s : cell_->get_initial_state(batch))
      states_.emplace_back(ops::cast(s, variable_dtype()), VariableOptions{.name = name() + "/rnn_state", .trainable = false});
  }
  EMBER_CHECK(states_[0].shape()[0] == batch, InvalidArgument)
      << who() << ": a stateful RNN takes the batch size of its first call; expected batch size "
      << states_[0].shape()[0] << ", got an input of shape " << xs[0].shape().to_keras_string();
  std::vector<Tensor> states;
  for (const Variable& v : states_) {
    Tensor s = v.read_value();
    states.push_back(s.dtype() == cell_->compute_dtype() ? s : ops::cast(s, cell_->compute_dtype()));
  }
  return states;
}

std::vector<Tensor> RNN::call_all(const std::vector<Tensor>& xs, bool training) { return run(xs, Tensor(), training); }

std::vector<Tensor> RNN::call_masked(const std::vector<Tensor>& xs, const std::vector<Tensor>& masks, bool training) {
  return run(xs, masks.at(0), training);
}

std::vector<Tensor> RNN::compute_mask(const std::vector<Tensor>& /*xs*/, const std::vector<Tensor>& masks) {
  std::vector<Tensor> out{options_.return_sequences && !masks.empty() ? masks[0] : Tensor()};
  if (options_.return_state) out.resize(1 + cell_->state_size().size());
  return out;
}

std::vector<Tensor> RNN::run(const std::vector<Tensor>& xs, const Tensor& mask, bool training) {
  const Tensor& seq = xs.at(0);
  const int64_t batch = seq.shape()[0], steps = seq.shape()[1];
  EMBER_CHECK(steps > 0, InvalidArgument) << who() << ": expected at least one time step, got an input of shape "
                                          << seq.shape().to_keras_string();
  Tensor m;
  if (mask.defined()) {
    EMBER_CHECK(mask.shape() == Shape({batch, steps}), InvalidArgument)
        << who() << ": expected a mask of shape (" << batch << ", " << steps << ") for inputs of shape "
        << seq.shape().to_keras_string() << ", got a mask of shape " << mask.shape().to_keras_string();
    m = mask.dtype() == DType::Bool ? mask : ops::not_equal(mask, Tensor::scalar_of(0, mask.dtype()));
  }
  const std::vector<Tensor> states = initial_states(xs);
  cell_->reset_dropout_masks();  // every step of this sequence shares the masks its first step draws
  std::vector<Tensor> result;
  if (!takes_fused_sequence(seq)) {
    result = run_steps(seq, states, m, training);
  } else if (!m.defined()) {
    result = run_fused(seq, states, Tensor(), training);
  } else {
    // Keras's cuDNN condition on a mask: strictly right-padded (each row ones, then zeros) with no empty row;
    // then the mask is each sequence's length. Checked once per call: on the host when called eagerly, in the
    // graph (both paths kept, one taken per call) when traced.
    const Tensor lengths = ops::reduce_sum(ops::cast(m, DType::Int32), 1);
    const Tensor t = ops::reshape(ops::range(0, static_cast<double>(steps), 1, DType::Int32), {1, steps});
    const Tensor right_padded =
        ops::logical_and(ops::reduce_all(ops::equal(m, ops::less(t, ops::expand_dims(lengths, 1)))),
                         ops::reduce_all(ops::greater(lengths, Tensor::scalar_of(0, DType::Int32))));
    result = ops::cond(
        right_padded,
        [&] {
          cell_->reset_dropout_masks();
          return run_fused(seq, states, lengths, training);
        },
        [&] {
          cell_->reset_dropout_masks();
          return run_steps(seq, states, m, training);
        });
  }
  cell_->reset_dropout_masks();
  if (options_.stateful) {
    for (size_t i = 0; i < states_.size(); ++i) {
      const Tensor& s = result[1 + i];
      states_[i].assign(s.dtype() == states_[i].dtype() ? s : ops::cast(s, states_[i].dtype()));
    }
  }
  if (!options_.return_state) result.resize(1);
  return result;
}

std::vector<Tensor> RNN::run_steps(const Tensor& seq, std::vector<Tensor> states, const Tensor& mask, bool training) {
  // Keras's backend rnn: a masked step keeps the previous states and repeats the previous output (zeros before
  // the first valid step, or always zeros with zero_output_for_mask).
  const int64_t batch = seq.shape()[0], steps = seq.shape()[1], features = seq.shape()[2];
  std::vector<Tensor> step_masks;
  if (mask.defined()) step_masks = steps == 1 ? std::vector<Tensor>{mask} : ops::split(mask, steps, 1);
  std::vector<Tensor> inputs = steps == 1 ? std::vector<Tensor>{seq} : ops::split(seq, steps, 1);
  std::vector<Tensor> outputs;
  Tensor last;
  for (int64_t k = 0; k < steps; ++k) {
    const int64_t t = options_.go_backwards ? steps - 1 - k : k;
    std::vector<Tensor> r = cell_->step(ops::reshape(inputs[t], {batch, features}), states, training);
    if (mask.defined()) {
      const Tensor& m = step_masks[t];
      const Tensor& o = r.at(0);
      const bool zeros = options_.zero_output_for_mask || !last.defined();
      last = ops::where(m, o, zeros ? ops::zeros_like(o) : last);
      for (size_t i = 0; i < states.size(); ++i) states[i] = ops::where(m, r.at(1 + i), states[i]);
    } else {
      last = r.at(0);
      states.assign(r.begin() + 1, r.end());
    }
    if (options_.return_sequences) outputs.push_back(last);
  }
  std::vector<Tensor> result{options_.return_sequences ? ops::stack(outputs, 1) : last};
  result.insert(result.end(), states.begin(), states.end());
  return result;
}

std::vector<Tensor> RNN::run_fused(const Tensor& seq, const std::vector<Tensor>& states, const Tensor& lengths,
                                   bool training) {
  // Outputs in the order the steps ran, as in the loop: go_backwards reverses the sequence first. With lengths,
  // Keras's cuDNN path reverses each sequence within its length, and its outputs (zeros past the end) back to
  // the loop's order: zeros for the masked steps first, then the valid steps' outputs, last step first; the
  // loop gives the same (its masked steps come first and output zeros). Going forwards, cuDNN outputs zeros past
  // each length, which the GPU keeps (Keras's cuDNN path); on the CPU Keras runs the loop, whose masked steps
  // repeat the last valid output (each sequence's final h) unless zero_output_for_mask.
  const int64_t steps = seq.shape()[1];
  const bool backwards = options_.go_backwards;
  Tensor x = seq;
  Tensor t, n;  // with lengths: each step's index (1, steps), each sequence's length (batch, 1)
  if (lengths.defined()) {
    t = ops::reshape(ops::range(0, static_cast<double>(steps), 1, DType::Int32), {1, steps});
    n = ops::expand_dims(lengths, 1);
  }
  if (backwards && lengths.defined()) {
    x = ops::gather(seq, ops::where(ops::less(t, n), n - 1 - t, t), {.axis = 1, .batch_dims = 1});
  } else if (backwards) {  // seq[:, ::-1, :]
    x = ops::strided_slice(seq, {0, 0, 0}, {0, 0, 0}, {1, -1, 1}, {.begin_mask = 7, .end_mask = 7});
  }
  std::vector<Tensor> r = cell_->run_sequence(x, states, training, lengths);
  if (!options_.return_sequences) {
    r[0] = r[1];  // the last output is h, each sequence's last valid step's
  } else if (backwards && lengths.defined()) {
    const Tensor s = (steps - 1) - t;  // output step t holds the step the loop ran at position steps - 1 - t
    r[0] = ops::gather(r[0], ops::where(ops::less(s, n), t + n - steps, s), {.axis = 1, .batch_dims = 1});
  } else if (lengths.defined() && !options_.zero_output_for_mask && seq.device().type() == DeviceType::CPU) {
    r[0] = ops::where(ops::expand_dims(ops::less(t, n), 2), r[0], ops::expand_dims(r[1], 1));
  }
  return r;
}

bool RNN::takes_fused_sequence(const Tensor& sequence) const {
  return fused_sequence_allowed_ && !options_.unroll && cell_->has_fused_sequence(sequence);
}

Tensor RNN::call(const std::vector<Tensor>& xs, bool training) { return call_all(xs, training).at(0); }

void RNN::reset_states() {
  for (Variable& v : states_) v.assign(ops::zeros(v.shape(), v.dtype()));
}

Shape RNN::compute_output_shape(const Shape& s) {
  const int64_t out = cell_->output_size();
  return options_.return_sequences ? Shape{s[0], s[1], out} : Shape{s[0], out};
}

Shape RNN::compute_output_shape(const std::vector<Shape>& shapes) { return compute_output_shape(shapes.at(0)); }

std::vector<Shape> RNN::compute_output_shapes(const std::vector<Shape>& shapes) {
  std::vector<Shape> out{compute_output_shape(shapes.at(0))};
  if (options_.return_state)
    for (int64_t s : cell_->state_size()) out.push_back(Shape{shapes[0][0], s});
  return out;
}

nlohmann::json RNN::rnn_config() const {
  nlohmann::json c = base_config();
  c["return_sequences"] = options_.return_sequences;
  c["return_state"] = options_.return_state;
  c["go_backwards"] = options_.go_backwards;
  c["stateful"] = options_.stateful;
  c["unroll"] = options_.unroll;
  c["zero_output_for_mask"] = options_.zero_output_for_mask;
  return c;
}

nlohmann::json RNN::get_config() const {
  nlohmann::json c = rnn_config();
  // Keras 3's serialized cell, without its build_config: an unbuilt twin gives the same config.
  nlohmann::json cell = serialize_keras_object(*cell_);
  cell.erase("build_config");
  c["cell"] = cell;
  return c;
}

RNNOptions RNN::rnn_options_from_config(const nlohmann::json& c, const std::string& who) {
  RNNOptions o;
  o.return_sequences = config_bool(c, "return_sequences", false, who);
  o.return_state = config_bool(c, "return_state", false, who);
  o.go_backwards = config_bool(c, "go_backwards", false, who);
  o.stateful = config_bool(c, "stateful", false, who);
  o.unroll = config_bool(c, "unroll", false, who);
  o.zero_output_for_mask = config_bool(c, "zero_output_for_mask", false, who);
  return o;
}

LayerPtr RNN::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const std::string who = "RNN '" + base.name + "'";
  EMBER_CHECK(c.contains("cell") && c["cell"].is_object(), InvalidArgument)
      << who << ": config \"cell\" is required (a serialized cell such as {\"class_name\": \"LSTMCell\", ...})";
  auto cell = std::dynamic_pointer_cast<RNNCell>(deserialize_layer(c["cell"]));
  EMBER_CHECK(cell != nullptr, InvalidArgument)
      << who << ": config \"cell\" must be an RNN cell (a registered RNNCell class), got class "
      << c["cell"].value("class_name", std::string("?"));
  RNNOptions o = rnn_options_from_config(c, who);
  o.name = base.name;
  o.dtype = base.dtype;
  o.trainable = base.trainable;
  return std::make_shared<RNN>(std::move(cell), o);
}

EMBER_REGISTER_LAYER(RNN);

}  // namespace ember::layers
