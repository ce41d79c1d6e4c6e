#pragma once
// MobileNetV2 (Keras: keras.applications.MobileNetV2), "MobileNetV2: Inverted Residuals and Linear
// Bottlenecks" (Sandler et al., 2018): the same layers, names, options and weight order as Keras.
#include <cstdint>
#include <string>

#include "framework/core/shape.h"
#include "framework/core/tensor.h"
#include "framework/model/model.h"

namespace ember::applications {

// MobileNetV2's arguments, in Keras's order, with Keras's defaults except `weights` (as in
// ApplicationOptions, which describes the arguments the two share).
struct MobileNetV2Options {
  Shape input_shape{};  // empty: (224, 224, 3) with the top, (-1, -1, 3) without it; at least 32x32
  // The width multiplier: every layer's filters scaled by it (rounded to a multiple of 8); < 1 shrinks
  // the network, > 1 widens it (the last 1x1 convolution too).
  double alpha = 1.0;
  bool include_top = true;
  std::string weights{};  // "", or the path of a weights file; "imagenet" is Unimplemented
  std::string pooling{};  // without the top: "", "avg" or "max"
  int64_t classes = 1000;
  std::string classifier_activation = "softmax";
  std::string name{};  // empty: "mobilenetv2_<alpha, 2 decimals>_<rows>" ("mobilenetv2_1.00_224")
};

// MobileNetV2 (about 3.5M parameters at alpha 1 with the 1000-class top).
Model MobileNetV2(MobileNetV2Options options = {});

namespace mobilenet_v2 {
// MobileNetV2's input preprocessing: tf style, x / 127.5 - 1, from [0, 255] into [-1, 1] (Keras:
// keras.applications.mobilenet_v2.preprocess_input).
Tensor preprocess_input(const Tensor& x);
}  // namespace mobilenet_v2

}  // namespace ember::applications
