#pragma once
// ResNet50, ResNet101 and ResNet152 (Keras: keras.applications.resnet), "Deep Residual Learning for Image
// Recognition" (He et al., 2015): the same layers, names, options and weight order as Keras builds.
#include "applications/imagenet_utils.h"
#include "framework/model/model.h"

namespace ember::applications {

// ResNet50 (about 25.6M parameters with the 1000-class top), named "resnet50" unless options.name says.
Model ResNet50(ApplicationOptions options = {});
// ResNet101 ("resnet101") and ResNet152 ("resnet152"): more blocks in the third and fourth stages.
Model ResNet101(ApplicationOptions options = {});
Model ResNet152(ApplicationOptions options = {});

namespace resnet {
// The ResNets' input preprocessing: caffe style (RGB to BGR, ImageNet's channel means subtracted, no
// scaling) of images with values in [0, 255] (Keras: keras.applications.resnet.preprocess_input).
Tensor preprocess_input(const Tensor& x);
}  // namespace resnet

// keras.applications.resnet50 is the same module under another name.
namespace resnet50 = resnet;

}  // namespace ember::applications
