#pragma once
// Bidirectional (Keras: keras.layers.Bidirectional): runs a recurrent layer over the sequence forwards and a
// copy of it (or backward_layer) backwards, then merges the two outputs. The forward layer is remade from the
// given layer's config as "forward_<name>" (fresh weights, as Keras), the backward one as "backward_<name>"
// with go_backwards. A mask on the sequences goes to both directions.
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "layers/rnn.h"

namespace ember::layers {

struct BidirectionalOptions {
  // "concat" (the outputs joined on the last axis), "sum", "mul", "ave", or std::nullopt (Keras's None): both
  // outputs, forward then backward (call_outputs).
  std::optional<std::string> merge_mode = "concat";
  // The backward direction, used as given (its go_backwards must differ from the layer's; stateful,
  // return_sequences and return_state must agree). Null: a copy of the layer with go_backwards.
  std::shared_ptr<RNN> backward_layer{};
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class Bidirectional : public Layer {
  EMBER_LAYER(Bidirectional)
  // layer: any recurrent layer (SimpleRNN, LSTM, GRU, RNN), a temporary or shared.
  template <class L>
    requires std::is_base_of_v<RNN, L> && (!std::is_lvalue_reference_v<L>)
  explicit Bidirectional(L&& layer, BidirectionalOptions options = {})
      : Bidirectional(std::make_shared<L>(std::move(layer)), std::move(options)) {}
  explicit Bidirectional(const std::shared_ptr<RNN>& layer, BidirectionalOptions options = {});
  Bidirectional(Bidirectional&&) = default;
  static LayerPtr from_config(const nlohmann::json& config);

  using Layer::build;
  using Layer::call;
  using Layer::compute_output_shape;
  void build(const std::vector<Shape>& input_shapes) override;
  Tensor call(const std::vector<Tensor>& xs, bool training) override { return call_all(xs, training).at(0); }
  Tensor call(const Tensor& x, bool training) override { return call(std::vector<Tensor>{x}, training); }
  // {merged output, forward states..., backward states...}; without a merge mode the two outputs come first.
  std::vector<Tensor> call_all(const std::vector<Tensor>& xs, bool training) override;
  std::vector<Tensor> call_masked(const std::vector<Tensor>& xs, const std::vector<Tensor>& masks,
                                  bool training) override;
  // The sequences' mask on each output with return_sequences; none otherwise and on the states.
  std::vector<Tensor> compute_mask(const std::vector<Tensor>& xs, const std::vector<Tensor>& masks) override;
  Shape compute_output_shape(const Shape& input_shape) override;
  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  std::vector<Shape> compute_output_shapes(const std::vector<Shape>& input_shapes) override;
  void check_input_shape(const std::vector<Shape>& input_shapes) const override;
  nlohmann::json get_config() const override;
  // Keras saves the two directions under these attribute names.
  std::vector<std::pair<std::string, LayerPtr>> attribute_sublayers() const override {
    return {{"forward_layer", forward_}, {"backward_layer", backward_}};
  }

  void reset_states();
  void reset_state() { reset_states(); }

  const std::shared_ptr<RNN>& forward_layer() const { return forward_; }
  const std::shared_ptr<RNN>& backward_layer() const { return backward_; }
  const std::optional<std::string>& merge_mode() const { return merge_mode_; }

 private:
  std::vector<Tensor> run(const std::vector<Tensor>& xs, const Tensor& mask, bool training);
  std::string who() const { return "Bidirectional '" + name() + "'"; }

  std::shared_ptr<RNN> forward_, backward_;
  std::optional<std::string> merge_mode_;
};

}  // namespace ember::layers
