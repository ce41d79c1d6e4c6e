#pragma once
// LSTM (Keras: keras.layers.LSTM): long short-term memory, RNN over an LSTMCell (gates i, f, c, o).
#include <cstdint>
#include <optional>
#include <string>

#include "layers/lstm_cell.h"
#include "layers/rnn.h"

namespace ember::layers {

struct LSTMOptions {
  std::string activation = "tanh";              // Keras name; empty = linear
  std::string recurrent_activation = "sigmoid";  // of the gates
  bool use_bias = true;
  Initializer kernel_initializer = "glorot_uniform";
  Initializer recurrent_initializer = "orthogonal";
  Initializer bias_initializer = "zeros";
  bool unit_forget_bias = true;  // the forget gate's bias starts at 1
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

class LSTM : public RNN {
  EMBER_LAYER(LSTM)
  explicit LSTM(int64_t units, LSTMOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);
  nlohmann::json get_config() const override;

  int64_t units() const { return units_; }
  const LSTMOptions& options() const { return options_; }
  // The cell that holds the weights (kernel, recurrent_kernel, bias).
  LSTMCell& lstm_cell() const { return static_cast<LSTMCell&>(*cell()); }

 private:
  int64_t units_;
  LSTMOptions options_;
};

}  // namespace ember::layers
