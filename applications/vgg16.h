#pragma once
// VGG16 (Keras: keras.applications.vgg16), "Very Deep Convolutional Networks for Large-Scale Image
// Recognition" (Simonyan and Zisserman, 2014): the same layers, names, options and weight order as Keras.
#include "applications/imagenet_utils.h"
#include "framework/model/model.h"

namespace ember::applications {

// VGG16 (about 138M parameters with the 1000-class top, 14.7M without it), named "vgg16" unless
// options.name says. With the top, Flatten feeds two 4096-unit Dense layers, so the input size is fixed.
Model VGG16(ApplicationOptions options = {});

namespace vgg16 {
// VGG16's input preprocessing: caffe style (RGB to BGR, ImageNet's channel means subtracted, no scaling)
// of images with values in [0, 255] (Keras: keras.applications.vgg16.preprocess_input).
Tensor preprocess_input(const Tensor& x);
}  // namespace vgg16

}  // namespace ember::applications
