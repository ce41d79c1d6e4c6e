#pragma once
// TimeDistributed (Keras: keras.layers.TimeDistributed): applies one layer to every time step of a
// (batch, timesteps, ...) input, with the same weights, and stacks the results along axis 1. A mask
// (batch, timesteps) is passed on unchanged.
#include <memory>
#include <type_traits>
#include <vector>

#include "framework/model/layer.h"

namespace ember::layers {

class TimeDistributed : public Layer {
  EMBER_LAYER(TimeDistributed)
  // layer: a temporary (layers::TimeDistributed(layers::Dense(8))) or a shared layer.
  template <class L>
    requires std::is_base_of_v<Layer, L> && (!std::is_lvalue_reference_v<L>) && (!std::is_same_v<L, TimeDistributed>)
  explicit TimeDistributed(L&& layer, LayerOptions options = {})
      : TimeDistributed(std::move(layer).move_to_shared(), std::move(options)) {}
  explicit TimeDistributed(LayerPtr layer, LayerOptions options = {});
  TimeDistributed(TimeDistributed&&) = default;
  static LayerPtr from_config(const nlohmann::json& config);

  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;
  std::vector<Tensor> call_masked(const std::vector<Tensor>& xs, const std::vector<Tensor>& masks,
                                  bool training) override;
  Shape compute_output_shape(const Shape& input_shape) override;
  DType compute_output_dtype(const std::vector<DType>& input_dtypes) const override {
    return layer_->compute_output_dtype(input_dtypes);
  }
  void check_input_shape(const std::vector<Shape>& input_shapes) const override;
  nlohmann::json get_config() const override;
  // Keras saves the wrapped layer under the attribute name "layer".
  std::vector<std::pair<std::string, LayerPtr>> attribute_sublayers() const override { return {{"layer", layer_}}; }

  const LayerPtr& layer() const { return layer_; }

 private:
  Tensor run(const Tensor& x, const Tensor& mask, bool training);
  Shape child_shape(const Shape& s) const;

  LayerPtr layer_;
};

}  // namespace ember::layers
