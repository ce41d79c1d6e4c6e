#pragma once
// Dot (Keras: keras.layers.Dot): the dot product of two inputs' samples along one axis each (Keras's
// batch_dot): (batch, n) . (batch, n) -> (batch, 1); (batch, m, k) . (batch, k, n) with axes (2, 1) ->
// (batch, m, n); the output keeps x's other axes, then y's.
#include <array>
#include <string>
#include <vector>

#include "layers/merge.h"

namespace ember::layers {

struct DotOptions {
  // L2-normalise each input along its dot axis first, so the output is the cosine similarity.
  bool normalize = false;
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class Dot : public Merge {
  EMBER_LAYER(Dot)
  // One axis for both inputs (negative counts from each input's end); never the batch axis 0.
  explicit Dot(int64_t axes, DotOptions options = {});
  // x's axis, then y's.
  explicit Dot(std::array<int64_t, 2> axes, DotOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

  // Exactly two inputs, used as they are (no rank alignment, unlike the elementwise merges).
  Tensor call(const std::vector<Tensor>& xs, bool training) override;
  Tensor call(const Tensor& x, bool training) override { return call(std::vector<Tensor>{x}, training); }
  // The product has no mask (Keras's Dot.compute_mask).
  std::vector<Tensor> compute_mask(const std::vector<Tensor>& /*xs*/, const std::vector<Tensor>& /*masks*/) override {
    return {};
  }
  nlohmann::json get_config() const override;

 protected:
  Tensor merge_function(const std::vector<Tensor>& xs) const override;
  // Two inputs of rank >= 2, equal known batch sizes, equal sizes on the two dot axes.
  Shape merged_shape(const std::vector<Shape>& shapes) const override;

 private:
  Dot(std::vector<int64_t> axes, DotOptions options);
  // The two dot axes for inputs of these ranks, made non-negative.
  std::array<int64_t, 2> resolved_axes(int64_t rank_x, int64_t rank_y) const;

  std::vector<int64_t> axes_;  // one entry (an int in the config) or two
  DotOptions options_;
};

}  // namespace ember::layers
