#pragma once
// What the Keras-style dataset loaders return: datasets::Split and TrainTest.
#include "framework/core/tensor.h"

namespace ember::datasets {

// One split of a labelled dataset: inputs and labels, CPU tensors with the same first dimension.
struct Split {
  Tensor x;
  Tensor y;
};
// auto [train, test] = datasets::fashion_mnist::load_data();
struct TrainTest {
  Split train, test;
};

}  // namespace ember::datasets
