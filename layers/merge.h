#pragma once
// Merge (Keras: keras.layers.Merge in base_merge.py): the base of the layers that combine a list of
// tensors elementwise (Add, Subtract, Multiply, Average, Maximum, ...).
#include <string>
#include <vector>

#include "framework/model/layer.h"

namespace ember::layers {

// Keras's broadcasting rule: per-sample shapes (batch excluded) are aligned from the right; a dimension
// of 1 stretches to the other's size, any other mismatch is InvalidArgument naming both shapes. An input
// of lower rank gets size-1 axes inserted after the batch axis. Known batch sizes must agree.
class Merge : public Layer {
 public:
  Merge(const std::string& base_name, const LayerOptions& options) : Layer(base_name, options) {
    supports_masking_ = true;
  }

  void build(const Shape& input_shape) override { build(std::vector<Shape>{input_shape}); }
  void build(const std::vector<Shape>& input_shapes) override;
  // A single tensor is merged as a list of one.
  Tensor call(const Tensor& x, bool training) override { return call(std::vector<Tensor>{x}, training); }
  Tensor call(const std::vector<Tensor>& xs, bool training) override;
  Shape compute_output_shape(const Shape& input_shape) override {
    return compute_output_shape(std::vector<Shape>{input_shape});
  }
  Shape compute_output_shape(const std::vector<Shape>& input_shapes) override { return merged_shape(input_shapes); }
  // No fixed input spec (as Keras): any list of shapes this layer can merge is accepted after the build.
  void check_input_shape(const std::vector<Shape>& input_shapes) const override { merged_shape(input_shapes); }
  // Keras: the inputs' masks or-ed together; none when an input has none.
  std::vector<Tensor> compute_mask(const std::vector<Tensor>& xs, const std::vector<Tensor>& masks) override;

 protected:
  // The merge of inputs already brought to a common rank (they broadcast like NumPy).
  virtual Tensor merge_function(const std::vector<Tensor>& xs) const = 0;
  // The output shape of merging these shapes, or InvalidArgument; subclasses add their own checks.
  virtual Shape merged_shape(const std::vector<Shape>& shapes) const;
  // "Add 'add'": how errors name this layer.
  std::string who() const { return class_name() + " '" + name() + "'"; }
};

}  // namespace ember::layers
