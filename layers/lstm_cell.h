#pragma once
// LSTMCell (Keras: keras.layers.LSTMCell): the long short-term memory step, gates in Keras's order i, f, c, o
// along the kernels' last axis; states {h, c}.
#include <cstdint>
#include <optional>
#include <string>

#include "layers/rnn_cell.h"

namespace ember::layers {

struct LSTMCellOptions {
  std::string activation = "tanh";              // Keras name; empty = linear
  std::string recurrent_activation = "sigmoid";  // of the gates
  bool use_bias = true;
  Initializer kernel_initializer = "glorot_uniform";
  Initializer recurrent_initializer = "orthogonal";
  Initializer bias_initializer = "zeros";
  bool unit_forget_bias = true;  // the forget gate's bias starts at 1 (the other gates' at bias_initializer)
  Regularizer kernel_regularizer{};
  Regularizer recurrent_regularizer{};
  Regularizer bias_regularizer{};
  double dropout = 0.0;            // of the inputs, while training; masks fixed over a sequence
  double recurrent_dropout = 0.0;  // of the previous h; with it, one mask per gate (Keras's implementation 1)
  std::optional<uint64_t> seed{};
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class LSTMCell : public RNNCell {
  EMBER_LAYER(LSTMCell)
  explicit LSTMCell(int64_t units, LSTMCellOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);
  static LSTMCellOptions cell_options_from_config(const nlohmann::json& config, const std::string& who);

  using RNNCell::build;
  void build(const Shape& input_shape) override;
  std::vector<int64_t> state_size() const override { return {units_, units_}; }
  std::vector<Tensor> step(const Tensor& input, const std::vector<Tensor>& states, bool training) override;
  // Keras's cuDNN conditions: tanh, sigmoid gates, use_bias and no recurrent dropout (ops::lstm_sequence).
  bool has_fused_sequence(const Tensor& sequence) const override;
  std::vector<Tensor> run_sequence(const Tensor& sequence, const std::vector<Tensor>& states, bool training,
                                   const Tensor& sequence_lengths) override;
  nlohmann::json get_config() const override;

  int64_t units() const { return units_; }
  const LSTMCellOptions& options() const { return options_; }
  const Variable& kernel() const { return kernel_; }
  const Variable& recurrent_kernel() const { return recurrent_kernel_; }
  const Variable& bias() const { return bias_; }

 private:
  int64_t units_;
  LSTMCellOptions options_;
  Variable kernel_, recurrent_kernel_, bias_;
};

}  // namespace ember::layers
