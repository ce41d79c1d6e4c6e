#pragma once
// What the applications share (Keras: keras.applications.imagenet_utils): input preprocessing, the input
// shape rules, and the checks of the builders' common arguments.
#include <cstdint>
#include <string>
#include <utility>

#include "framework/core/shape.h"
#include "framework/core/tensor.h"
#include "framework/model/model.h"

namespace ember::applications {

// The arguments ResNet50, ResNet101, ResNet152 and VGG16 take, in Keras's order, with Keras's defaults
// except `weights` (Ember downloads nothing: see below). Keras's input_tensor is left out: call the
// returned model on a tensor instead (a Model is a layer).
struct ApplicationOptions {
  bool include_top = true;  // the classifier head (for VGG16 also its two 4096-unit layers)
  // "" (Keras's None): freshly initialised weights; a path: a weights file loaded with Model::load_weights
  // (.weights.h5 or legacy .h5); "imagenet" is Unimplemented (no download).
  std::string weights{};
  // The per-image shape (height, width, channels), -1 for an unknown size; empty: Keras's default,
  // (224, 224, 3) with the top and (-1, -1, 3) without it. Height and width must be at least 32.
  Shape input_shape{};
  std::string pooling{};  // without the top: "" (the 4-D feature map), "avg" or "max" (global pooling)
  int64_t classes = 1000;
  std::string classifier_activation = "softmax";  // of the top's last layer; "" or "linear": logits
  std::string name{};                             // empty: the model's Keras name ("resnet50", "vgg16")
};

namespace imagenet_utils {

// Preprocesses a batch of images (or one image), channels last, for a model trained in one of Keras's
// modes (Keras: imagenet_utils.preprocess_input):
//   "caffe": RGB to BGR, then each channel minus ImageNet's mean (103.939, 116.779, 123.68), no scaling;
//   "tf":    x / 127.5 - 1, into [-1, 1];
//   "torch": x / 255, then each channel minus ImageNet's mean (0.485, 0.456, 0.406), divided by its
//            standard deviation (0.229, 0.224, 0.225).
// A floating-point x keeps its dtype; an integer one becomes float32. caffe and torch need 3 channels.
Tensor preprocess_input(const Tensor& x, const std::string& mode = "caffe");

// The input shape a builder uses (Keras: obtain_input_shape, channels last, weights not "imagenet"): the
// given one after checks, or the default described at ApplicationOptions::input_shape. `who` names the
// builder in errors.
Shape obtain_input_shape(const std::string& who, const Shape& input_shape, int64_t default_size, int64_t min_size,
                         bool require_flatten);

// The ((top, bottom), (left, right)) zero padding before a strided convolution of this kernel size, so
// that it sees the input as TF's "same" padding would (Keras: correct_pad); `input_shape` is a symbolic
// tensor's (batch, height, width, channels), -1 for an unknown size.
std::pair<std::pair<int64_t, int64_t>, std::pair<int64_t, int64_t>> correct_pad(const Shape& input_shape,
                                                                                int64_t kernel_size);

// Keras's checks of the common arguments, with Ember's errors: weights "", "imagenet" (Unimplemented) or
// an existing file; pooling "", "avg" or "max"; classes positive with the top; with a weights file and the
// top, classifier_activation softmax or linear (as Keras's validate_activation).
void validate_arguments(const std::string& who, bool include_top, const std::string& weights, const std::string& pooling,
                        int64_t classes, const std::string& classifier_activation);

// Loads the weights file named by `weights` into model (nothing for "").
void load_weights_argument(Model& model, const std::string& weights);

}  // namespace imagenet_utils

}  // namespace ember::applications
