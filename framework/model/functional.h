#pragma once
// The symbolic graph of functional models (Keras: KerasTensor history and Node): each layer call on
// symbolic tensors records a Node; Model(inputs, outputs) walks these nodes back from the outputs.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "framework/core/tensor.h"
#include "framework/model/layer.h"

namespace ember {

namespace detail {

// One call of a layer on symbolic tensors.
struct Node {
  LayerPtr layer;
  // Symbolic: the call's inputs, then the tensors of its keyword arguments (kwargs); empty for an Input layer's node.
  std::vector<Tensor> inputs;
  Shape output_shape;
  DType output_dtype = DType::Float32;
  // A training flag fixed at this call (Keras: a node's kwargs {"training": true}, e.g. Monte Carlo
  // dropout); unset: the model's own training flag applies.
  std::optional<bool> training;
  // Every output's shape, when the layer gives several (an RNN with return_state); empty: output_shape alone.
  std::vector<Shape> more_output_shapes;
  // Keras call keyword arguments beyond training (CallKwargs::values: {"__tensor__": i} is the i-th of the keyword
  // tensors, the last kwarg_tensors entries of inputs); empty for most calls.
  nlohmann::json kwargs = nlohmann::json::object();
  size_t kwarg_tensors = 0;

  // The call's inputs (without the keyword tensors), and its keyword arguments, from one value per entry of inputs.
  std::vector<Tensor> call_inputs(const std::vector<Tensor>& values) const;
  CallKwargs call_kwargs(const std::vector<Tensor>& values) const;
};

// Carried by a symbolic tensor: the node that produced it, and which of the node's outputs it is (a layer
// with several outputs, such as an RNN with return_state, gives one tensor per output).
struct KerasHistory {
  std::shared_ptr<Node> node;
  int64_t tensor_index = 0;
};

}  // namespace detail

namespace layers {

struct InputOptions {
  int64_t batch_size = -1;  // -1: unknown (None)
  DType dtype = DType::Float32;
  std::string name{};
};

// The layer behind layers::Input (Keras: InputLayer); in a Sequential it only fixes the input shape.
class InputLayer : public Layer {
  EMBER_LAYER(InputLayer)
  // batch_shape includes the batch dimension (-1 when unknown).
  InputLayer(const Shape& batch_shape, DType dtype = DType::Float32, const std::string& name = "");
  static LayerPtr from_config(const nlohmann::json& config);
  Tensor call(const Tensor& x, bool /*training*/) override { return x; }
  Shape compute_output_shape(const Shape& input_shape) override { return input_shape; }
  nlohmann::json get_config() const override;
  const Shape& batch_shape() const { return batch_shape_; }
  DType input_dtype() const { return dtype_; }

 private:
  Shape batch_shape_;
  DType dtype_;
};

// A symbolic input of per-sample shape `shape` (Keras: keras.Input); feed it to layers to build a
// functional Model, or put it first in a Sequential.
Tensor Input(const Shape& shape, InputOptions options = {});

}  // namespace layers

namespace detail {
// The Input layer whose node produced a symbolic tensor, or null when it comes from another layer.
std::shared_ptr<layers::InputLayer> input_layer_of(const Tensor& symbolic);
// Records a node for layer called on symbolic inputs and returns its symbolic output.
Tensor record_node(LayerPtr layer, const std::vector<Tensor>& inputs, const Shape& output_shape, DType dtype);
// The same for a layer with several outputs and keyword arguments: one symbolic tensor per output shape (all of the
// dtype).
std::vector<Tensor> record_node(LayerPtr layer, const std::vector<Tensor>& inputs, const std::vector<Shape>& output_shapes,
                                DType dtype, const CallKwargs& kwargs = {});
}  // namespace detail

}  // namespace ember
