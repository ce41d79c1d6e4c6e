#pragma once
// GRU (Keras: keras.layers.GRU): gated recurrent unit, RNN over a GRUCell (gates z, r, h; reset_after true by
// default, as in Keras 3).
#include <cstdint>
#include <optional>
#include <string>

#include "layers/gru_cell.h"
#include "layers/rnn.h"

namespace ember::layers {

struct GRUOptions {
  std::string activation = "tanh";              // Keras name; empty = linear
  std::string recurrent_activation = "sigmoid";  // of the gates
  bool use_bias = true;
  Initializer kernel_initializer = "glorot_uniform";
  Initializer recurrent_initializer = "orthogonal";
  Initializer bias_initializer = "zeros";
  Regularizer kernel_regularizer{};
  Regularizer recurrent_regularizer{};
  Regularizer bias_regularizer{};
  double dropout = 0.0;            // of the inputs, while training; one mask for every step of a sequence
  double recurrent_dropout = 0.0;  // of the previous state, likewise
  bool reset_after = true;  // reset gate after the recurrent matmul; bias shape (2, 3 * units)
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

class GRU : public RNN {
  EMBER_LAYER(GRU)
  explicit GRU(int64_t units, GRUOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);
  nlohmann::json get_config() const override;

  int64_t units() const { return units_; }
  const GRUOptions& options() const { return options_; }
  // The cell that holds the weights (kernel, recurrent_kernel, bias).
  GRUCell& gru_cell() const { return static_cast<GRUCell&>(*cell()); }

 private:
  int64_t units_;
  GRUOptions options_;
};

}  // namespace ember::layers
