#pragma once
// EfficientNetB0 to B7 (Keras: keras.applications.efficientnet), "EfficientNet: Rethinking Model Scaling for
// Convolutional Neural Networks" (Tan and Le, 2019): the same layers, names, options and weight order as Keras.
// The input preprocessing is part of the model (a Rescaling by 1/255 and a Normalization layer), so the models
// take float images with values in [0, 255].
#include "applications/imagenet_utils.h"
#include "framework/model/model.h"

namespace ember::applications {

// EfficientNetB0 (about 5.3M parameters with the 1000-class top, 224x224 by default), named "efficientnetb0"
// unless options.name says. The Normalization layer is not adapted: mean 0 and variance 1 until weights are
// loaded or it is adapted (as Keras with weights=None).
Model EfficientNetB0(ApplicationOptions options = {});
// The larger ones: wider (filters scaled), deeper (blocks repeated) and with a higher default resolution
// and top dropout: B1 (240x240), B2 (260), B3 (300), B4 (380), B5 (456), B6 (528), B7 (600, about 66.7M
// parameters).
Model EfficientNetB1(ApplicationOptions options = {});
Model EfficientNetB2(ApplicationOptions options = {});
Model EfficientNetB3(ApplicationOptions options = {});
Model EfficientNetB4(ApplicationOptions options = {});
Model EfficientNetB5(ApplicationOptions options = {});
Model EfficientNetB6(ApplicationOptions options = {});
Model EfficientNetB7(ApplicationOptions options = {});

namespace efficientnet {
// A pass-through, as Keras's keras.applications.efficientnet.preprocess_input: the models rescale and
// normalise their inputs themselves.
Tensor preprocess_input(const Tensor& x);
}  // namespace efficientnet

}  // namespace ember::applications
