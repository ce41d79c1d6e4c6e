#pragma once
// GlobalAveragePooling1D (Keras: keras.layers.GlobalAveragePooling1D): the mean over the steps; with a mask
// (batch, steps), the mean over the unmasked steps. The output carries no mask.
#include "layers/base_global_pooling.h"

namespace ember::layers {

using GlobalAveragePooling1DOptions = GlobalPooling1DOptions;

class GlobalAveragePooling1D : public GlobalPooling1D {
  EMBER_LAYER(GlobalAveragePooling1D)
  explicit GlobalAveragePooling1D(GlobalAveragePooling1DOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);
  std::vector<Tensor> call_masked(const std::vector<Tensor>& xs, const std::vector<Tensor>& masks,
                                  bool training) override;
  std::vector<Tensor> compute_mask(const std::vector<Tensor>& /*xs*/, const std::vector<Tensor>& /*masks*/) override {
    return {};
  }

 protected:
  Tensor reduce(const Tensor& x) const override;
};

}  // namespace ember::layers
