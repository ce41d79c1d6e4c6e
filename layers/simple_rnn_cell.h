#pragma once
// SimpleRNNCell (Keras: keras.layers.SimpleRNNCell): h = activation(x @ kernel + bias + h_prev @ recurrent_kernel).
#include <cstdint>
#include <optional>
#include <string>

#include "layers/rnn_cell.h"

namespace ember::layers {

struct SimpleRNNCellOptions {
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
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class SimpleRNNCell : public RNNCell {
  EMBER_LAYER(SimpleRNNCell)
  explicit SimpleRNNCell(int64_t units, SimpleRNNCellOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);
  static SimpleRNNCellOptions cell_options_from_config(const nlohmann::json& config, const std::string& who);

  using RNNCell::build;
  void build(const Shape& input_shape) override;
  std::vector<int64_t> state_size() const override { return {units_}; }
  std::vector<Tensor> step(const Tensor& input, const std::vector<Tensor>& states, bool training) override;
  nlohmann::json get_config() const override;

  int64_t units() const { return units_; }
  const SimpleRNNCellOptions& options() const { return options_; }
  const Variable& kernel() const { return kernel_; }
  const Variable& recurrent_kernel() const { return recurrent_kernel_; }
  const Variable& bias() const { return bias_; }

 private:
  int64_t units_;
  SimpleRNNCellOptions options_;
  Variable kernel_, recurrent_kernel_, bias_;
};

}  // namespace ember::layers
