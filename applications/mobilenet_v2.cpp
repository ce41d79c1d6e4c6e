#include "applications/mobilenet_v2.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "applications/imagenet_utils.h"
#include "framework/core/error.h"
#include "framework/model/functional.h"
#include "layers/add.h"
#include "layers/batch_normalization.h"
#include "layers/conv2d.h"
#include "layers/dense.h"
#include "layers/depthwise_conv2d.h"
#include "layers/global_average_pooling2d.h"
#include "layers/global_max_pooling2d.h"
#include "layers/relu.h"
#include "layers/zero_padding2d.h"

namespace ember::applications {

namespace {

// Keras: _make_divisible: v rounded to the nearest multiple of divisor (at least divisor), never more
// than 10% below v.
int64_t make_divisible(double v, int64_t divisor = 8) {
  int64_t new_v = std::max(divisor, static_cast<int64_t>(v + static_cast<double>(divisor) / 2) / divisor * divisor);
  if (static_cast<double>(new_v) < 0.9 * v) new_v += divisor;
  return new_v;
}

// MobileNetV2's batch normalisations: channels last, Keras's epsilon and momentum for this model.
Tensor mobilenet_bn(const Tensor& x, const std::string& name) {
  return layers::BatchNormalization({.axis = -1, .momentum = 0.999, .epsilon = 1e-3, .name = name})(x);
}

Tensor relu6(const Tensor& x, const std::string& name) { return layers::ReLU({.max_value = 6.0, .name = name})(x); }

// Keras: _inverted_res_block: a 1x1 expansion (not in block 0), a 3x3 depthwise convolution and a linear
// 1x1 projection, with a residual connection when the shape is kept.
Tensor inverted_res_block(const Tensor& inputs, int64_t expansion, int64_t stride, double alpha, int64_t filters,
                          int64_t block_id) {
  const int64_t in_channels = inputs.shape()[inputs.shape().rank() - 1];
  const auto pointwise_conv_filters = static_cast<int64_t>(static_cast<double>(filters) * alpha);
  const int64_t pointwise_filters = make_divisible(static_cast<double>(pointwise_conv_filters));
  Tensor x = inputs;
  std::string prefix = "block_" + std::to_string(block_id) + "_";
  if (block_id != 0) {
    x = layers::Conv2D(expansion * in_channels, 1, {.padding = "same", .use_bias = false, .name = prefix + "expand"})(x);
    x = mobilenet_bn(x, prefix + "expand_BN");
    x = relu6(x, prefix + "expand_relu");
  } else {
    prefix = "expanded_conv_";
  }
  if (stride == 2) {
    const auto [pad_h, pad_w] = imagenet_utils::correct_pad(x.shape(), 3);
    x = layers::ZeroPadding2D(layers::Padding2D(pad_h, pad_w), {.name = prefix + "pad"})(x);
  }
  x = layers::DepthwiseConv2D(3, {.strides = stride,
                                  .padding = stride == 1 ? "same" : "valid",
                                  .use_bias = false,
                                  .name = prefix + "depthwise"})(x);
  x = mobilenet_bn(x, prefix + "depthwise_BN");
  x = relu6(x, prefix + "depthwise_relu");
  x = layers::Conv2D(pointwise_filters, 1, {.padding = "same", .use_bias = false, .name = prefix + "project"})(x);
  x = mobilenet_bn(x, prefix + "project_BN");
  if (in_channels == pointwise_filters && stride == 1) return layers::Add({.name = prefix + "add"})({inputs, x});
  return x;
}

}  // namespace

Model MobileNetV2(MobileNetV2Options o) {
  const std::string who = "MobileNetV2";
  imagenet_utils::validate_arguments(who, o.include_top, o.weights, o.pooling, o.classes, o.classifier_activation);
  EMBER_CHECK(o.alpha > 0, InvalidArgument) << who << ": alpha must be positive, got " << o.alpha;
  const Shape input_shape = imagenet_utils::obtain_input_shape(who, o.input_shape, 224, 32, o.include_top);

  Tensor img_input = layers::Input(input_shape);
  Tensor x = layers::Conv2D(make_divisible(32 * o.alpha), 3,
                            {.strides = 2, .padding = "same", .use_bias = false, .name = "Conv1"})(img_input);
  x = mobilenet_bn(x, "bn_Conv1");
  x = relu6(x, "Conv1_relu");

  // (filters, stride, expansion) of blocks 0 to 16.
  struct Block {
    int64_t filters, stride, expansion;
  };
  const Block blocks[] = {{16, 1, 1},  {24, 2, 6},  {24, 1, 6},  {32, 2, 6},  {32, 1, 6},  {32, 1, 6},
                          {64, 2, 6},  {64, 1, 6},  {64, 1, 6},  {64, 1, 6},  {96, 1, 6},  {96, 1, 6},
                          {96, 1, 6},  {160, 2, 6}, {160, 1, 6}, {160, 1, 6}, {320, 1, 6}};
  int64_t block_id = 0;
  for (const Block& b : blocks) x = inverted_res_block(x, b.expansion, b.stride, o.alpha, b.filters, block_id++);

  const int64_t last_block_filters = o.alpha > 1.0 ? make_divisible(1280 * o.alpha) : 1280;
  x = layers::Conv2D(last_block_filters, 1, {.use_bias = false, .name = "Conv_1"})(x);
  x = mobilenet_bn(x, "Conv_1_bn");
  x = relu6(x, "out_relu");

  if (o.include_top) {
    x = layers::GlobalAveragePooling2D()(x);
    x = layers::Dense(o.classes, {.activation = o.classifier_activation, .name = "predictions"})(x);
  } else if (o.pooling == "avg") {
    x = layers::GlobalAveragePooling2D()(x);
  } else if (o.pooling == "max") {
    x = layers::GlobalMaxPooling2D()(x);
  }

  std::string name = o.name;
  if (name.empty()) {
    char alpha[32];
    std::snprintf(alpha, sizeof alpha, "%.2f", o.alpha);
    name = "mobilenetv2_" + std::string(alpha) + "_" + (input_shape[0] < 0 ? "None" : std::to_string(input_shape[0]));
  }
  Model model(img_input, x, {.name = name});
  imagenet_utils::load_weights_argument(model, o.weights);
  return model;
}

namespace mobilenet_v2 {
Tensor preprocess_input(const Tensor& x) { return imagenet_utils::preprocess_input(x, "tf"); }
}  // namespace mobilenet_v2

}  // namespace ember::applications
