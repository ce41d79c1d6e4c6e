#pragma once
// Ready-made image models built layer by layer as Keras builds them (Keras: keras.applications), with
// their preprocess_input functions.
#include "applications/efficientnet.h"
#include "applications/imagenet_utils.h"
#include "applications/mobilenet_v2.h"
#include "applications/resnet.h"
#include "applications/vgg16.h"
