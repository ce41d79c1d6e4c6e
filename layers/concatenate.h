#pragma once
// Concatenate (Keras: keras.layers.Concatenate): joins its inputs along `axis`; every other dimension
// must agree.
#include "layers/merge.h"

namespace ember::layers {

class Concatenate : public Merge {
  EMBER_LAYER(Concatenate)
  // axis counts the batch dimension (Keras: -1 = the last axis, 1 = the first per-sample axis).
  explicit Concatenate(int64_t axis = -1, LayerOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);
  nlohmann::json get_config() const override;
  // Keras: the masks (all true for an input without one, broadcast over a missing last axis) concatenated
  // along axis, then any() over the last axis; none when no input has a mask.
  std::vector<Tensor> compute_mask(const std::vector<Tensor>& xs, const std::vector<Tensor>& masks) override;

  int64_t axis() const { return axis_; }

 protected:
  Tensor merge_function(const std::vector<Tensor>& xs) const override;
  // Same rank, equal dimensions off the axis (unknown ones match anything); the axis sums.
  Shape merged_shape(const std::vector<Shape>& shapes) const override;

 private:
  int64_t axis_;
};

}  // namespace ember::layers
