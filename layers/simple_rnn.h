#pragma once
// SimpleRNN (Keras: keras.layers.SimpleRNN): a fully-connected recurrent layer, RNN over a SimpleRNNCell.
#include <cstdint>
#include <optional>
#include <string>

#include "layers/simple_rnn_cell.h"
#include "layers/rnn.h"

namespace ember::layers {

struct SimpleRNNOptions {
  std::string activation = "tanh";  // Keras name; empty = linear
  bool use_bias = true;
  Initializer kernel_initializer = "glorot_uniform";
  Initializer recurrent_initializer = "orthogonal";
  Initializer bias_initializer = "zeros";
  Regularizer kernel_regularizer{};
  Regularizer recurrent_regularizer{};
  Regularizer bias_regularizer{};
  double dropout = 0.0;            // of the inputs, while training; one mask for every step of a sequence
  double recurrent_dropout = 0.0;  // of the previous state, likewise
  std::optional<uint64_t> seed{};  // the dropout masks' seed (unseeded: the global sequence)
  bool return_sequences = false;
  bool return_state = false;
  bool go_backwards = false;
  bool stateful = false;
  bool unroll = false;
  bool zero_output_for_mask = false;  // masked steps output zeros instead of the last valid output
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class SimpleRNN : public RNN {
  EMBER_LAYER(SimpleRNN)
  explicit SimpleRNN(int64_t units, SimpleRNNOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);
  nlohmann::json get_config() const override;

  int64_t units() const { return units_; }
  const SimpleRNNOptions& options() const { return options_; }
  // The cell that holds the weights (kernel, recurrent_kernel, bias).
  SimpleRNNCell& simple_rnn_cell() const { return static_cast<SimpleRNNCell&>(*cell()); }

 private:
  int64_t units_;
  SimpleRNNOptions options_;
};

}  // namespace ember::layers
