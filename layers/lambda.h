#pragma once
// Lambda (Keras: keras.layers.Lambda): wraps a C++ callable as a layer, for quick stateless operations in
// Sequential and functional models. Its callable cannot be saved: serialising a Lambda (get_config, so
// Model::save and to_json of a model containing one) throws Unimplemented naming the layer, and loading a
// Lambda config (as Keras refuses unsafe deserialisation of Python lambdas) throws InvalidArgument.
// save_weights/load_weights work, as the layer has no weights. Write a Layer subclass for a layer that saves.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "framework/model/layer.h"

namespace ember::layers {

struct LambdaOptions {
  // The per-sample output shape (batch excluded), as Keras's output_shape; none: found by calling the function
  // on zeros.
  std::optional<Shape> output_shape{};
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class Lambda : public Layer {
  EMBER_LAYER(Lambda)
  using Function = std::function<Tensor(const Tensor&)>;
  using ListFunction = std::function<Tensor(const std::vector<Tensor>&)>;

  // A function of one tensor, composed of ops (so it is differentiable wherever they are).
  explicit Lambda(Function function, LambdaOptions options = {});
  // A function of a list of tensors (the layer is then called with a list).
  explicit Lambda(ListFunction function, LambdaOptions options = {});
  // Always throws InvalidArgument: a saved Lambda's function cannot be restored.
  static LayerPtr from_config(const nlohmann::json& config);

  Tensor call(const Tensor& x, bool training) override;
  Tensor call(const std::vector<Tensor>& xs, bool training) override;
  // Any number of inputs; no weights.
  void build(const Shape& /*input_shape*/) override {}
  void build(const std::vector<Shape>& /*input_shapes*/) override {}
  Shape compute_output_shape(const Shape& input_shape) override;
  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override;
  // No input spec in Keras: any shapes are accepted after the first call.
  void check_input_shape(const std::vector<Shape>& /*input_shapes*/) const override {}
  // Always throws Unimplemented naming the layer.
  nlohmann::json get_config() const override;

 private:
  Function function_;
  ListFunction list_function_;
  LambdaOptions options_;
};

}  // namespace ember::layers
