#pragma once
// RNNCell (Keras: the cell protocol of keras.layers.RNN, with DropoutRNNCell): one time step of a recurrent
// layer, from an input and the previous states to an output and the new states. SimpleRNNCell, LSTMCell and
// GRUCell derive from it, and so does a user's cell given to layers::RNN.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "framework/core/config_reader.h"
#include "framework/model/layer.h"

namespace ember::layers {

class RNNCell : public Layer {
 public:
  using Layer::Layer;
  using Layer::build;
  using Layer::call;
  using Layer::compute_output_shape;

  // --- what a cell overrides (besides build and get_config) ---
  // One size per state tensor (Keras: state_size); an LSTM cell has two, {units, units}.
  virtual std::vector<int64_t> state_size() const = 0;
  // The size of each step's output (Keras: output_size); default: the first state's.
  virtual int64_t output_size() const { return state_size().at(0); }
  // One time step: input (batch, features) and states (batch, state_size[i]), in the compute dtype, give
  // {output, new states...}.
  virtual std::vector<Tensor> step(const Tensor& input, const std::vector<Tensor>& states, bool training) = 0;
  // Zero states for a batch, in the compute dtype (Keras: get_initial_state).
  virtual std::vector<Tensor> get_initial_state(int64_t batch_size) const;

  // --- the whole-sequence path (LSTM and GRU: ops::lstm_sequence, ops::gru_sequence) ---
  // Whether run_sequence can run this cell over a sequence of `sequence`'s device: Keras's conditions for cuDNN.
  virtual bool has_fused_sequence(const Tensor& /*sequence*/) const { return false; }
  // Every step at once: sequence (batch, timesteps, features) and states as for step give {outputs (batch,
  // timesteps, output_size), final states...}. Input dropout applies to the whole sequence with the mask that
  // step would draw; the caller resets the masks around it as around the steps. sequence_lengths (int32 (batch),
  // or undefined: all the steps) runs each sequence over its first steps only, as the ops do (ops/recurrent.h):
  // zeros after them, the final states those of each sequence's last step.
  virtual std::vector<Tensor> run_sequence(const Tensor& sequence, const std::vector<Tensor>& states, bool training,
                                           const Tensor& sequence_lengths);

  // Forgets the dropout masks of the current sequence: layers::RNN calls it before and after each sequence,
  // so every step of one call shares its masks and every call draws new ones.
  void reset_dropout_masks();

  // --- as a layer of its own: called on {input, states...} (or on the input alone, from zero states),
  // returns the output; call_outputs gives {output, new states...} ---
  void build(const std::vector<Shape>& input_shapes) override;
  Tensor call(const Tensor& x, bool training) override;
  Tensor call(const std::vector<Tensor>& xs, bool training) override;
  std::vector<Tensor> call_all(const std::vector<Tensor>& xs, bool training) override;
  Shape compute_output_shape(const Shape& input_shape) override;
  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  // {output, new states...}: what call_outputs gives.
  std::vector<Shape> compute_output_shapes(const std::vector<Shape>& input_shapes) override;
  void check_input_shape(const std::vector<Shape>& input_shapes) const override;

 protected:
  // Dropout rates and seed for dropout_mask (Keras's DropoutRNNCell fields); set by the constructor.
  void set_dropout(double dropout, double recurrent_dropout, std::optional<uint64_t> seed);
  double dropout() const { return dropout_; }
  double recurrent_dropout() const { return recurrent_dropout_; }
  // `count` masks shaped like `like`: 0 with probability rate, else 1 / (1 - rate) (Keras's dropout of ones).
  // Drawn on the first step of a sequence and kept for the rest; recurrent selects the recurrent masks.
  const std::vector<Tensor>& dropout_masks(const Tensor& like, int count, bool recurrent) {
    return dropout_masks(like.shape(), count, recurrent);
  }
  const std::vector<Tensor>& dropout_masks(const Shape& shape, int count, bool recurrent);
  // The sequence (batch, timesteps, features) times the input dropout mask of its steps while training with
  // dropout (Keras's cuDNN path: one (batch, features) mask broadcast over the steps), else as given.
  Tensor sequence_with_dropout(const Tensor& sequence, bool training);
  // "<Class> '<name>'" for messages.
  std::string who() const;
  // The states given to a standalone call, checked against state_size.
  void check_states(const Tensor& input, const std::vector<Tensor>& states) const;

 private:
  Tensor draw_mask(const Shape& shape, double rate);

  double dropout_ = 0, recurrent_dropout_ = 0;
  std::optional<uint64_t> seed_;
  uint64_t seeded_draws_ = 0;  // how many seeded masks were drawn: the seed generator's state
  std::vector<Tensor> input_masks_, recurrent_masks_;
};

namespace detail {

// The activation's Keras name for a config ("" is "linear").
std::string rnn_activation_name(const std::string& activation);
// Keras's conditions for its cuDNN kernels, shared by LSTMCell and GRUCell: tanh, sigmoid gates, a bias and no
// recurrent dropout.
template <class O>
bool rnn_fusable_options(const O& o) {
  return o.activation == "tanh" && o.recurrent_activation == "sigmoid" && o.use_bias && o.recurrent_dropout == 0;
}
// Runs a whole-sequence op, which takes float32 and float64, on float32 copies of its inputs under a float16 or
// bfloat16 compute dtype, and casts its results back to it.
std::vector<Tensor> rnn_run_widened(DType compute_dtype, std::vector<Tensor> inputs,
                                    const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& op);
// Reads a config's "seed" (null: none).
std::optional<uint64_t> rnn_config_seed(const nlohmann::json& c, const std::string& who);

// The Keras config keys that the built-in cells and their layers share (the options structs spell them
// alike): activation, recurrent_activation (LSTM, GRU), use_bias, the initializers, regularizers and
// constraints, dropout and recurrent_dropout; the seed is written by the caller (SimpleRNN leaves it out).
template <class O>
void rnn_write_cell_keys(nlohmann::json& c, const O& o) {
  c["activation"] = rnn_activation_name(o.activation);
  if constexpr (requires { o.recurrent_activation; }) c["recurrent_activation"] = rnn_activation_name(o.recurrent_activation);
  c["use_bias"] = o.use_bias;
  c["kernel_initializer"] = o.kernel_initializer.to_json();
  c["recurrent_initializer"] = o.recurrent_initializer.to_json();
  c["bias_initializer"] = o.bias_initializer.to_json();
  c["kernel_regularizer"] = o.kernel_regularizer.to_json();
  c["recurrent_regularizer"] = o.recurrent_regularizer.to_json();
  c["bias_regularizer"] = o.bias_regularizer.to_json();
  c["kernel_constraint"] = nullptr;
  c["recurrent_constraint"] = nullptr;
  c["bias_constraint"] = nullptr;
  c["dropout"] = o.dropout;
  c["recurrent_dropout"] = o.recurrent_dropout;
}

template <class O>
void rnn_read_cell_keys(const nlohmann::json& c, O& o, const std::string& who) {
  using ::ember::detail::config_bool;
  using ::ember::detail::config_double;
  using ::ember::detail::config_string;
  o.activation = config_string(c, "activation", "tanh", who);
  if (o.activation == "linear") o.activation.clear();
  if constexpr (requires { o.recurrent_activation; }) {
    o.recurrent_activation = config_string(c, "recurrent_activation", "sigmoid", who);
    if (o.recurrent_activation == "linear") o.recurrent_activation.clear();
  }
  o.use_bias = config_bool(c, "use_bias", true, who);
  if (c.contains("kernel_initializer")) o.kernel_initializer = Initializer::from_json(c["kernel_initializer"]);
  if (c.contains("recurrent_initializer")) o.recurrent_initializer = Initializer::from_json(c["recurrent_initializer"]);
  if (c.contains("bias_initializer")) o.bias_initializer = Initializer::from_json(c["bias_initializer"]);
  if (c.contains("kernel_regularizer")) o.kernel_regularizer = Regularizer::from_json(c["kernel_regularizer"]);
  if (c.contains("recurrent_regularizer")) o.recurrent_regularizer = Regularizer::from_json(c["recurrent_regularizer"]);
  if (c.contains("bias_regularizer")) o.bias_regularizer = Regularizer::from_json(c["bias_regularizer"]);
  for (const char* k : {"kernel_constraint", "recurrent_constraint", "bias_constraint", "activity_regularizer"})
    EMBER_CHECK(!c.contains(k) || c[k].is_null(), Unimplemented)
        << who << ": config \"" << k << "\" is not supported (only null), got " << c[k].dump();
  o.dropout = config_double(c, "dropout", 0.0, who);
  o.recurrent_dropout = config_double(c, "recurrent_dropout", 0.0, who);
  o.seed = rnn_config_seed(c, who);
  o.name = config_string(c, "name", "", who);
}

// A cell's options from its layer's (the fields both spell alike).
template <class CellOptions, class LayerOptionsT>
CellOptions rnn_cell_options(const LayerOptionsT& o, const std::string& cell_name) {
  CellOptions c;
  c.activation = o.activation;
  if constexpr (requires { o.recurrent_activation; }) c.recurrent_activation = o.recurrent_activation;
  c.use_bias = o.use_bias;
  c.kernel_initializer = o.kernel_initializer;
  c.recurrent_initializer = o.recurrent_initializer;
  c.bias_initializer = o.bias_initializer;
  if constexpr (requires { o.unit_forget_bias; }) c.unit_forget_bias = o.unit_forget_bias;
  c.kernel_regularizer = o.kernel_regularizer;
  c.recurrent_regularizer = o.recurrent_regularizer;
  c.bias_regularizer = o.bias_regularizer;
  c.dropout = o.dropout;
  c.recurrent_dropout = o.recurrent_dropout;
  c.seed = o.seed;
  if constexpr (requires { o.reset_after; }) c.reset_after = o.reset_after;
  c.name = cell_name;
  c.dtype = o.dtype;
  c.trainable = o.trainable;
  return c;
}

}  // namespace detail

}  // namespace ember::layers
