#pragma once
// GRUCell (Keras: keras.layers.GRUCell): the gated recurrent unit step, gates in Keras's order z, r, h along
// the kernels' last axis. reset_after (Keras 3's default) applies the reset gate after the recurrent matmul
// and keeps separate input and recurrent biases, bias shape (2, 3 * units); otherwise before it, bias
// shape (3 * units).
#include <cstdint>
#include <optional>
#include <string>

#include "layers/rnn_cell.h"

namespace ember::layers {

struct GRUCellOptions {
  std::string activation = "tanh";              // Keras name; empty = linear
  std::string recurrent_activation = "sigmoid";  // of the gates
  bool use_bias = true;
  Initializer kernel_initializer = "glorot_uniform";
  Initializer recurrent_initializer = "orthogonal";
  Initializer bias_initializer = "zeros";
  Regularizer kernel_regularizer{};
  Regularizer recurrent_regularizer{};
  Regularizer bias_regularizer{};
  double dropout = 0.0;            // of the inputs, while training; masks fixed over a sequence
  double recurrent_dropout = 0.0;  // of the previous h; with it, one mask per gate (Keras's implementation 1)
  bool reset_after = true;
  std::optional<uint64_t> seed{};
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class GRUCell : public RNNCell {
  EMBER_LAYER(GRUCell)
  explicit GRUCell(int64_t units, GRUCellOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);
  static GRUCellOptions cell_options_from_config(const nlohmann::json& config, const std::string& who);

  using RNNCell::build;
  void build(const Shape& input_shape) override;
  std::vector<int64_t> state_size() const override { return {units_}; }
  std::vector<Tensor> step(const Tensor& input, const std::vector<Tensor>& states, bool training) override;
  // Keras's cuDNN conditions: tanh, sigmoid gates, use_bias, no recurrent dropout and, on a GPU, reset_after
  // (cuDNN's form); the CPU runs both forms (ops::gru_sequence).
  bool has_fused_sequence(const Tensor& sequence) const override;
  std::vector<Tensor> run_sequence(const Tensor& sequence, const std::vector<Tensor>& states, bool training,
                                   const Tensor& sequence_lengths) override;
  nlohmann::json get_config() const override;

  int64_t units() const { return units_; }
  const GRUCellOptions& options() const { return options_; }
  const Variable& kernel() const { return kernel_; }
  const Variable& recurrent_kernel() const { return recurrent_kernel_; }
  const Variable& bias() const { return bias_; }

 private:
  int64_t units_;
  GRUCellOptions options_;
  Variable kernel_, recurrent_kernel_, bias_;
};

}  // namespace ember::layers
