#include "applications/vgg16.h"

#include <string>

#include "framework/model/functional.h"
#include "layers/conv2d.h"
#include "layers/dense.h"
#include "layers/flatten.h"
#include "layers/global_average_pooling2d.h"
#include "layers/global_max_pooling2d.h"
#include "layers/max_pooling2d.h"

namespace ember::applications {

Model VGG16(ApplicationOptions o) {
  imagenet_utils::validate_arguments("VGG16", o.include_top, o.weights, o.pooling, o.classes, o.classifier_activation);
  const Shape input_shape = imagenet_utils::obtain_input_shape("VGG16", o.input_shape, 224, 32, o.include_top);

  Tensor img_input = layers::Input(input_shape);
  Tensor x = img_input;
  // Five blocks of 3x3 "same" ReLU convolutions, each closed by a 2x2 max pooling.
  const int64_t filters[5] = {64, 128, 256, 512, 512};
  const int convs[5] = {2, 2, 3, 3, 3};
  for (int b = 0; b < 5; ++b) {
    const std::string block = "block" + std::to_string(b + 1);
    for (int c = 1; c <= convs[b]; ++c)
      x = layers::Conv2D(filters[b], 3,
                         {.padding = "same", .activation = "relu", .name = block + "_conv" + std::to_string(c)})(x);
    x = layers::MaxPooling2D(2, {.strides = 2, .name = block + "_pool"})(x);
  }

  if (o.include_top) {
    x = layers::Flatten({.name = "flatten"})(x);
    x = layers::Dense(4096, {.activation = "relu", .name = "fc1"})(x);
    x = layers::Dense(4096, {.activation = "relu", .name = "fc2"})(x);
    x = layers::Dense(o.classes, {.activation = o.classifier_activation, .name = "predictions"})(x);
  } else if (o.pooling == "avg") {
    x = layers::GlobalAveragePooling2D()(x);
  } else if (o.pooling == "max") {
    x = layers::GlobalMaxPooling2D()(x);
  }
  Model model(img_input, x, {.name = o.name.empty() ? "vgg16" : o.name});
  imagenet_utils::load_weights_argument(model, o.weights);
  return model;
}

namespace vgg16 {
Tensor preprocess_input(const Tensor& x) { return imagenet_utils::preprocess_input(x, "caffe"); }
}  // namespace vgg16

}  // namespace ember::applications
