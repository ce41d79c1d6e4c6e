#pragma once
// ResNet-50 as keras.applications.ResNet50 builds it (keras/src/applications/resnet.py, ResNet v1 with
// include_top=True, weights=None): the same layers, options, names and order, so its parameter count is
// Keras's 25,636,712 at 224x224x3 and 1000 classes. Shared by bench_gpu and its CPU test.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "framework/ember.h"

namespace ember::bench {

namespace resnet50_detail {

constexpr double kBnEpsilon = 1.001e-5;  // Keras's ResNet, not BatchNormalization's default 1e-3

inline Tensor bn(const Tensor& x, const std::string& name) {
  return layers::BatchNormalization({.epsilon = kBnEpsilon, .name = name})(x);
}

inline Tensor relu(const Tensor& x, const std::string& name) {
  return layers::Activation("relu", {.name = name})(x);
}

// residual_block_v1: the stride is on the first 1x1 convolution (and the shortcut's), as in Keras.
inline Tensor block(const Tensor& x, int64_t filters, int64_t stride, bool conv_shortcut, const std::string& name) {
  Tensor shortcut = x;
  if (conv_shortcut) {
    shortcut = layers::Conv2D(4 * filters, 1, {.strides = stride, .name = name + "_0_conv"})(x);
    shortcut = bn(shortcut, name + "_0_bn");
  }
  Tensor h = layers::Conv2D(filters, 1, {.strides = stride, .name = name + "_1_conv"})(x);
  h = relu(bn(h, name + "_1_bn"), name + "_1_relu");
  h = layers::Conv2D(filters, 3, {.padding = "same", .name = name + "_2_conv"})(h);
  h = relu(bn(h, name + "_2_bn"), name + "_2_relu");
  h = layers::Conv2D(4 * filters, 1, {.name = name + "_3_conv"})(h);
  h = bn(h, name + "_3_bn");
  h = layers::Add({.name = name + "_add"})(std::vector<Tensor>{shortcut, h});
  return relu(h, name + "_out");
}

// stack_residual_blocks_v1
inline Tensor stack(Tensor x, int64_t filters, int blocks, int64_t stride1, const std::string& name) {
  x = block(x, filters, stride1, true, name + "_block1");
  for (int i = 2; i <= blocks; ++i) x = block(x, filters, 1, false, name + "_block" + std::to_string(i));
  return x;
}

}  // namespace resnet50_detail

// keras.applications.ResNet50(weights=None, input_shape=input_shape, classes=classes): NHWC input,
// softmax output in the layer's policy (as Keras: the top Dense follows the global policy).
inline std::shared_ptr<Model> resnet50(Shape input_shape = {224, 224, 3}, int64_t classes = 1000) {
  using namespace resnet50_detail;
  const Tensor in = layers::Input(input_shape, {.name = "input_layer"});
  Tensor x = layers::ZeroPadding2D(layers::Padding2D{{3, 3}, {3, 3}}, {.name = "conv1_pad"})(in);
  x = layers::Conv2D(64, 7, {.strides = 2, .use_bias = true, .name = "conv1_conv"})(x);
  x = relu(bn(x, "conv1_bn"), "conv1_relu");
  x = layers::ZeroPadding2D(layers::Padding2D{{1, 1}, {1, 1}}, {.name = "pool1_pad"})(x);
  x = layers::MaxPooling2D(3, {.strides = 2, .name = "pool1_pool"})(x);
  x = stack(x, 64, 3, 1, "conv2");
  x = stack(x, 128, 4, 2, "conv3");
  x = stack(x, 256, 6, 2, "conv4");
  x = stack(x, 512, 3, 2, "conv5");
  x = layers::GlobalAveragePooling2D({.name = "avg_pool"})(x);
  const Tensor out = layers::Dense(classes, {.activation = "softmax", .name = "predictions"})(x);
  return std::make_shared<Model>(in, out, ModelOptions{.name = "resnet50"});
}

}  // namespace ember::bench
