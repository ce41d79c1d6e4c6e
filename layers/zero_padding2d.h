#pragma once
// ZeroPadding2D (Keras: keras.layers.ZeroPadding2D): zero rows above/below and zero columns left/right of
// an NHWC input.
#include <string>
#include <utility>

#include "framework/model/layer.h"

namespace ember::layers {

// Keras's padding argument: one int for all four sides, {h, w} symmetric per axis, or
// {{top, bottom}, {left, right}}.
struct Padding2D {
  int64_t top, bottom, left, right;
  Padding2D(int64_t p) : top(p), bottom(p), left(p), right(p) {}  // NOLINT: implicit, as Keras's int
  Padding2D(int64_t h, int64_t w) : top(h), bottom(h), left(w), right(w) {}
  Padding2D(std::pair<int64_t, int64_t> h, std::pair<int64_t, int64_t> w)
      : top(h.first), bottom(h.second), left(w.first), right(w.second) {}
  bool operator==(const Padding2D&) const = default;
  // Any of Keras's three config forms (an int, [h, w], [[top, bottom], [left, right]]); else InvalidArgument
  // naming who and the config key.
  static Padding2D from_json(const nlohmann::json& j, const std::string& who, const char* key);
  nlohmann::json to_json() const { return {{top, bottom}, {left, right}}; }
};

struct ZeroPadding2DOptions {
  std::string data_format = "channels_last";  // channels_first is rejected (NHWC only)
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class ZeroPadding2D : public Layer {
  EMBER_LAYER(ZeroPadding2D)
  explicit ZeroPadding2D(Padding2D padding = 1, ZeroPadding2DOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

  Tensor call(const Tensor& x, bool training) override;
  Shape compute_output_shape(const Shape& input_shape) override;
  // Keras's input spec is only ndim=4.
  void check_input_shape(const std::vector<Shape>& input_shapes) const override;
  nlohmann::json get_config() const override;

  const Padding2D& padding() const { return padding_; }

 private:
  Padding2D padding_;
  ZeroPadding2DOptions options_;
};

}  // namespace ember::layers
