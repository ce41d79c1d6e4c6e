#pragma once
// Embedding (Keras: keras.layers.Embedding): maps integer indices in [0, input_dim) to rows of a trainable
// (input_dim, output_dim) table.
#include <string>

#include "framework/model/layer.h"

namespace ember::layers {

struct EmbeddingOptions {
  Initializer embeddings_initializer = "uniform";  // RandomUniform(-0.05, 0.05), as Keras
  Regularizer embeddings_regularizer{};
  bool mask_zero = false;  // index 0 is padding: the output carries the mask x != 0 for the layers after it
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

// Inputs: int32 or int64 indices of any shape (floating inputs are cast to int32, truncating, as Keras);
// output: input shape + (output_dim,) in the compute dtype. An index outside [0, input_dim) is
// InvalidArgument.
class Embedding : public Layer {
  EMBER_LAYER(Embedding)
  Embedding(int64_t input_dim, int64_t output_dim, EmbeddingOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;
  // With mask_zero: x != 0.
  std::vector<Tensor> compute_mask(const std::vector<Tensor>& xs, const std::vector<Tensor>& masks) override;
  Shape compute_output_shape(const Shape& input_shape) override;
  // Integer inputs give compute-dtype outputs (the base would keep the input's integer dtype).
  DType compute_output_dtype(const std::vector<DType>& /*input_dtypes*/) const override { return compute_dtype(); }
  // The table does not depend on the input shape: any shape is accepted.
  void check_input_shape(const std::vector<Shape>& /*input_shapes*/) const override {}
  nlohmann::json get_config() const override;

  int64_t input_dim() const { return input_dim_; }
  int64_t output_dim() const { return output_dim_; }
  const Variable& embeddings() const { return embeddings_; }

 private:
  int64_t input_dim_, output_dim_;
  EmbeddingOptions options_;
  Variable embeddings_;
};

}  // namespace ember::layers
