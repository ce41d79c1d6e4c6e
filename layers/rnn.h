#pragma once
// RNN (Keras: keras.layers.RNN): runs a cell over the time axis of a (batch, timesteps, features) input. Called
// on {sequences, initial states...} it starts from those states (Keras's initial_state); with return_state,
// call_outputs gives {output, final states...}, concrete or symbolic (operator() returns the output alone).
// A mask (batch, timesteps) on the sequences (from Masking or Embedding(mask_zero)) skips the masked steps: they
// keep the states and repeat the last valid output, as Keras does. LSTM and GRU on their whole-sequence path take
// a right-padded mask as sequence lengths: on the CPU with the loop's outputs (Keras runs its loop there), on a GPU
// as Keras's cuDNN path, whose steps past each sequence's end output zeros with return_sequences.
#include <memory>
#include <string>
#include <vector>

#include "layers/rnn_cell.h"

namespace ember::layers {

struct RNNOptions {
  bool return_sequences = false;  // every step's output (batch, timesteps, units), else the last one
  bool return_state = false;      // call_outputs also returns the final states
  bool go_backwards = false;      // reads the sequence last step first; sequences come out in that order
  bool stateful = false;          // each batch starts from the last batch's final states (reset_states())
  bool unroll = false;            // accepted for Keras compatibility: the loop is always unrolled in C++
  // With a mask, masked steps output zeros (return_sequences) instead of the last valid step's output.
  bool zero_output_for_mask = false;
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class RNN : public Layer {
  EMBER_LAYER(RNN)
  // A user's cell (a temporary: layers::RNN(MyCell(8))) or a shared one.
  explicit RNN(RNNCell&& cell, RNNOptions options = {});
  explicit RNN(std::shared_ptr<RNNCell> cell, RNNOptions options = {});
  RNN(RNN&&) = default;
  static LayerPtr from_config(const nlohmann::json& config);

  using Layer::build;
  using Layer::call;
  using Layer::compute_output_shape;
  void build(const std::vector<Shape>& input_shapes) override;
  Tensor call(const std::vector<Tensor>& xs, bool training) override;
  Tensor call(const Tensor& x, bool training) override { return call(std::vector<Tensor>{x}, training); }
  std::vector<Tensor> call_all(const std::vector<Tensor>& xs, bool training) override;
  std::vector<Tensor> call_masked(const std::vector<Tensor>& xs, const std::vector<Tensor>& masks,
                                  bool training) override;
  // The sequences' mask with return_sequences, none otherwise; none for the states.
  std::vector<Tensor> compute_mask(const std::vector<Tensor>& xs, const std::vector<Tensor>& masks) override;
  Shape compute_output_shape(const Shape& input_shape) override;
  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  // The output's shape, then (return_state) each final state's: (batch, state_size[i]).
  std::vector<Shape> compute_output_shapes(const std::vector<Shape>& input_shapes) override;
  void check_input_shape(const std::vector<Shape>& input_shapes) const override;
  nlohmann::json get_config() const override;
  std::vector<std::pair<std::string, LayerPtr>> attribute_sublayers() const override { return {{"cell", cell_}}; }

  // Zeroes the states a stateful layer carries between batches (Keras: reset_states / reset_state).
  void reset_states();
  void reset_state() { reset_states(); }
  // A stateful layer's states (empty before its first call or when not stateful).
  const std::vector<Variable>& states() const { return states_; }

  const std::shared_ptr<RNNCell>& cell() const { return cell_; }
  const RNNOptions& rnn_options() const { return options_; }
  // Bidirectional sets it to return_sequences on its two layers, as Keras does.
  void set_zero_output_for_mask(bool zero) { options_.zero_output_for_mask = zero; }

 protected:
  // The base of SimpleRNN, LSTM and GRU: their cell, built from their options.
  RNN(const std::string& base_name, std::shared_ptr<RNNCell> cell, RNNOptions options);
  // The RNN keys of a config (return_sequences, ..., zero_output_for_mask), on top of base_config().
  nlohmann::json rnn_config() const;
  static RNNOptions rnn_options_from_config(const nlohmann::json& config, const std::string& who);
  std::string who() const { return class_name() + " '" + name() + "'"; }
  // LSTM and GRU run their cell over the whole sequence in one op where Keras would take cuDNN (the cell's
  // has_fused_sequence, no unroll, and no mask or a right-padded one with no empty sequence); an RNN over a user's
  // or built-in cell always runs step by step.
  bool fused_sequence_allowed_ = false;

 private:
  std::vector<Tensor> initial_states(const std::vector<Tensor>& xs);
  // One call: mask (batch, timesteps) or undefined. Returns {output, final states...}.
  std::vector<Tensor> run(const std::vector<Tensor>& xs, const Tensor& mask, bool training);
  // The loop over the time steps, from `states`; mask (batch, timesteps) bool or undefined.
  std::vector<Tensor> run_steps(const Tensor& sequence, std::vector<Tensor> states, const Tensor& mask, bool training);
  // The cell's whole-sequence op; sequence_lengths int32 (batch) or undefined.
  std::vector<Tensor> run_fused(const Tensor& sequence, const std::vector<Tensor>& states,
                                const Tensor& sequence_lengths, bool training);
  // Whether this call can take the cell's whole-sequence op (a mask permitting).
  bool takes_fused_sequence(const Tensor& sequence) const;

  std::shared_ptr<RNNCell> cell_;
  RNNOptions options_;
  std::vector<Variable> states_;  // stateful only; not weights (Keras does not save them either)
};

}  // namespace ember::layers
