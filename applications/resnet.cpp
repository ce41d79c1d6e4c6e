#include "applications/resnet.h"

#include <array>
#include <string>

#include "framework/model/functional.h"
#include "layers/activation.h"
#include "layers/add.h"
#include "layers/batch_normalization.h"
#include "layers/conv2d.h"
#include "layers/dense.h"
#include "layers/global_average_pooling2d.h"
#include "layers/global_max_pooling2d.h"
#include "layers/max_pooling2d.h"
#include "layers/zero_padding2d.h"

namespace ember::applications {

namespace {

using layers::Activation;
using layers::BatchNormalization;
using layers::Conv2D;

// Keras builds the ResNets' batch normalisations with axis=3 (channels last) and this epsilon.
Tensor resnet_bn(const Tensor& x, const std::string& name) {
  return BatchNormalization({.axis = 3, .epsilon = 1.001e-5, .name = name})(x);
}

// Keras: residual_block_v1, the bottleneck block (1x1, 3x3, 1x1 convolutions) with a projection shortcut
// (a strided 1x1 convolution) or the identity.
Tensor residual_block_v1(const Tensor& input, int64_t filters, int64_t stride, bool conv_shortcut,
                         const std::string& name) {
  Tensor shortcut = input;
  if (conv_shortcut) {
    shortcut = Conv2D(4 * filters, 1, {.strides = stride, .name = name + "_0_conv"})(input);
    shortcut = resnet_bn(shortcut, name + "_0_bn");
  }
  Tensor x = Conv2D(filters, 1, {.strides = stride, .name = name + "_1_conv"})(input);
  x = resnet_bn(x, name + "_1_bn");
  x = Activation("relu", {.name = name + "_1_relu"})(x);
  x = Conv2D(filters, 3, {.padding = "same", .name = name + "_2_conv"})(x);
  x = resnet_bn(x, name + "_2_bn");
  x = Activation("relu", {.name = name + "_2_relu"})(x);
  x = Conv2D(4 * filters, 1, {.name = name + "_3_conv"})(x);
  x = resnet_bn(x, name + "_3_bn");
  x = layers::Add({.name = name + "_add"})({shortcut, x});
  return Activation("relu", {.name = name + "_out"})(x);
}

// Keras: stack_residual_blocks_v1, a stage: its first block downsamples by stride1 and projects.
Tensor stack_residual_blocks_v1(Tensor x, int64_t filters, int64_t blocks, int64_t stride1, const std::string& name) {
  x = residual_block_v1(x, filters, stride1, true, name + "_block1");
  for (int64_t i = 2; i <= blocks; ++i) x = residual_block_v1(x, filters, 1, false, name + "_block" + std::to_string(i));
  return x;
}

// Keras: ResNet(stack_fn, preact=False, use_bias=True, ...), with the number of blocks of each stage.
Model resnet_v1(const std::string& who, const std::array<int64_t, 4>& blocks, const std::string& default_name,
                const ApplicationOptions& o) {
  imagenet_utils::validate_arguments(who, o.include_top, o.weights, o.pooling, o.classes, o.classifier_activation);
  const Shape input_shape = imagenet_utils::obtain_input_shape(who, o.input_shape, 224, 32, o.include_top);

  Tensor img_input = layers::Input(input_shape);
  Tensor x = layers::ZeroPadding2D(layers::Padding2D({3, 3}, {3, 3}), {.name = "conv1_pad"})(img_input);
  x = Conv2D(64, 7, {.strides = 2, .use_bias = true, .name = "conv1_conv"})(x);
  x = resnet_bn(x, "conv1_bn");
  x = Activation("relu", {.name = "conv1_relu"})(x);
  x = layers::ZeroPadding2D(layers::Padding2D({1, 1}, {1, 1}), {.name = "pool1_pad"})(x);
  x = layers::MaxPooling2D(3, {.strides = 2, .name = "pool1_pool"})(x);

  x = stack_residual_blocks_v1(x, 64, blocks[0], 1, "conv2");
  x = stack_residual_blocks_v1(x, 128, blocks[1], 2, "conv3");
  x = stack_residual_blocks_v1(x, 256, blocks[2], 2, "conv4");
  x = stack_residual_blocks_v1(x, 512, blocks[3], 2, "conv5");

  if (o.include_top) {
    x = layers::GlobalAveragePooling2D({.name = "avg_pool"})(x);
    x = layers::Dense(o.classes, {.activation = o.classifier_activation, .name = "predictions"})(x);
  } else if (o.pooling == "avg") {
    x = layers::GlobalAveragePooling2D({.name = "avg_pool"})(x);
  } else if (o.pooling == "max") {
    x = layers::GlobalMaxPooling2D({.name = "max_pool"})(x);
  }
  Model model(img_input, x, {.name = o.name.empty() ? default_name : o.name});
  imagenet_utils::load_weights_argument(model, o.weights);
  return model;
}

}  // namespace

Model ResNet50(ApplicationOptions options) { return resnet_v1("ResNet50", {3, 4, 6, 3}, "resnet50", options); }

Model ResNet101(ApplicationOptions options) { return resnet_v1("ResNet101", {3, 4, 23, 3}, "resnet101", options); }

Model ResNet152(ApplicationOptions options) { return resnet_v1("ResNet152", {3, 8, 36, 3}, "resnet152", options); }

namespace resnet {
Tensor preprocess_input(const Tensor& x) { return imagenet_utils::preprocess_input(x, "caffe"); }
}  // namespace resnet

}  // namespace ember::applications
