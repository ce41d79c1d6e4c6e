#pragma once
// GroupNormalization (Keras: keras.layers.GroupNormalization): splits the channels (`axis`) into `groups`
// groups and normalises each sample's group with its own mean and variance over the group's channels and
// every other non-batch axis, then scales by gamma and shifts by beta per channel. groups = channels is
// instance normalization, groups = 1 layer normalization over all axes.
#include <string>
#include <vector>

#include "framework/model/layer.h"

namespace ember::layers {

struct GroupNormalizationOptions {
  int64_t groups = 32;  // > 0, dividing the channel count; -1: one group per channel
  int64_t axis = -1;    // the channel axis (negative counts from the end; not the batch axis)
  double epsilon = 1e-3;
  bool center = true;  // beta
  bool scale = true;   // gamma
  Initializer beta_initializer = "zeros";
  Initializer gamma_initializer = "ones";
  Regularizer beta_regularizer{};
  Regularizer gamma_regularizer{};
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

// Weights: gamma then beta, each of shape (channels,). As in Keras, the statistics are computed in float32 for
// half inputs and the weights are used in their variable dtype; groups = -1 becomes the channel count at build
// (so a built layer's config names it). Keras's beta/gamma constraints are not implemented: a config with one
// is rejected.
class GroupNormalization : public Layer {
  EMBER_LAYER(GroupNormalization)
  explicit GroupNormalization(GroupNormalizationOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;
  Shape compute_output_shape(const Shape& input_shape) override;
  // Keras's input spec: the built rank and the built channel count.
  void check_input_shape(const std::vector<Shape>& input_shapes) const override;
  nlohmann::json get_config() const override;

  const Variable& gamma() const { return gamma_; }
  const Variable& beta() const { return beta_; }

 private:
  int64_t channel_axis(const Shape& input_shape) const;

  GroupNormalizationOptions options_;
  Variable gamma_, beta_;
};

}  // namespace ember::layers
